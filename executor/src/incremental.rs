//! Incremental delivery (`@defer`): the initial payload is written as soon as every
//! fetch it waits for is merged ([`Fetch::payloads`]), each deferred fragment as soon as
//! its own fetches are, while the others are still in flight. Payloads follow the
//! format Apollo Client and graphql-js read (`deferSpec=20220824`): the initial one is
//! `{"data":…,"errors":…,"hasNext":true}`, each later one
//! `{"incremental":[{"data":…,"path":[…],"label":…,"errors":…}],"hasNext":…}`.
//!
//! [`Fetch::payloads`]: graphfleet_planner::query_planner::Fetch::payloads

use crate::response::Store;
use crate::response::writer::{DeferPoint, PathSeg, ResponseError, Writer};
use crate::transport::Transport;
use crate::{ExecutionContext, in_plan_order, introspection, run_as_ready};
use graphfleet_planner::operation::{DeferMask, PRIMARY};
use serde::Serialize;

/// One payload of an incremental response, as JSON.
#[derive(Debug)]
pub struct Part {
    pub body: Vec<u8>,
    /// Whether it (or an earlier one) carries errors.
    pub field_errors: bool,
    /// The last payload (`hasNext: false`).
    pub last: bool,
    /// Its charge against the memory budget, held while it waits for the client: the
    /// transport keeps it until the payload is written.
    pub memory: Option<crate::memory::Charge>,
}

/// Execute the plan, handing each payload to `sink` as soon as it can be written; a
/// `sink` answering false (the client is gone) abandons the rest.
pub async fn execute_incremental<T: Transport>(
    ctx: &ExecutionContext<'_, T>,
    sink: &mut (dyn FnMut(Part) -> bool + Send),
) {
    let mut store = Store::with_root();
    let mut tally = crate::Tally::default();
    let mut fetch_errors = vec![Vec::new(); ctx.plan.fetches.len()];
    let mut delivery = Delivery::new(ctx);
    // Introspection needs no fetch: merged first, so the initial payload has it.
    let mut introspection_errors = Vec::new();
    introspection(ctx, &mut store, &mut introspection_errors);
    delivery.errors_before = introspection_errors;
    if !delivery.advance(&store, &mut fetch_errors, sink) {
        return;
    }
    let mut open = true;
    run_as_ready(
        ctx,
        &mut store,
        &mut fetch_errors,
        &mut tally,
        None,
        |i, store, errors| {
            delivery.fetched(i);
            open = delivery.advance(store, errors, sink);
            open
        },
    )
    .await;
    if open && !delivery.finished {
        // Every fetch is merged (or the plan had none left to run): send what remains.
        delivery.pending.fill(0);
        delivery.advance(&store, &mut fetch_errors, sink);
    }
}

/// Which payloads are sent and which still wait.
struct Delivery<'c, 'a, T: Transport> {
    ctx: &'c ExecutionContext<'a, T>,
    /// Per payload bit: fetches it still waits for.
    pending: [u32; 64],
    done: Vec<bool>,
    initial_sent: bool,
    /// Deferred fragments on objects already sent, waiting for their fetches.
    points: Vec<DeferPoint>,
    errors_before: Vec<ResponseError>,
    field_errors: bool,
    finished: bool,
}

/// The payloads fetch `i` serves (a fetch serving none counts for the initial one).
fn payloads_of<T: Transport>(ctx: &ExecutionContext<'_, T>, i: usize) -> DeferMask {
    match ctx.plan.fetches[i].payloads {
        0 => PRIMARY,
        mask => mask,
    }
}

impl<'c, 'a, T: Transport> Delivery<'c, 'a, T> {
    fn new(ctx: &'c ExecutionContext<'a, T>) -> Self {
        let mut pending = [0u32; 64];
        for i in 0..ctx.plan.fetches.len() {
            for_bits(payloads_of(ctx, i), |bit| pending[bit] += 1);
        }
        Self {
            ctx,
            pending,
            done: vec![false; ctx.plan.fetches.len()],
            initial_sent: false,
            points: Vec::new(),
            errors_before: Vec::new(),
            field_errors: false,
            finished: false,
        }
    }

    fn fetched(&mut self, i: usize) {
        self.done[i] = true;
        let pending = &mut self.pending;
        for_bits(payloads_of(self.ctx, i), |bit| {
            pending[bit] = pending[bit].saturating_sub(1)
        });
    }

    /// Sends every payload whose fetches are all merged; false once the client is gone
    /// or the last payload is sent (nothing more to wait for).
    fn advance(
        &mut self,
        store: &Store,
        fetch_errors: &mut [Vec<ResponseError>],
        sink: &mut (dyn FnMut(Part) -> bool + Send),
    ) -> bool {
        if self.finished {
            return false;
        }
        if !self.initial_sent {
            if self.pending[0] > 0 {
                return true;
            }
            self.initial_sent = true;
            let part = self.initial(store, fetch_errors);
            self.finished = part.last;
            if !sink(part) || self.finished {
                return false;
            }
        }
        let ready = |pending: &[u32; 64], p: &DeferPoint| pending[p.defer.0 as usize + 1] == 0;
        while self.points.iter().any(|p| ready(&self.pending, p)) {
            let pending = self.pending;
            let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.points)
                .into_iter()
                .partition(|p| ready(&pending, p));
            self.points = later;
            let part = self.subsequent(store, fetch_errors, &now);
            self.finished = part.last;
            if !sink(part) || self.finished {
                return false;
            }
        }
        true
    }

    fn initial(&mut self, store: &Store, fetch_errors: &mut [Vec<ResponseError>]) -> Part {
        let ctx = self.ctx;
        let done = &self.done;
        let mut errors = std::mem::take(&mut self.errors_before);
        errors.extend(in_plan_order(ctx.plan, fetch_errors, |i| {
            done[i] && payloads_of(ctx, i) & PRIMARY != 0
        }));
        // Charged while written and until sent (the transport drops it with the bytes).
        let charge = ctx.memory.budget().charge();
        let (mut body, points) =
            writer(ctx, store, &mut errors, &charge).write_initial(Some(Store::ROOT));
        self.field_errors |= !errors.is_empty();
        self.points = points;
        body.push(b',');
        self.finish(body, charge)
    }

    /// `body` closed with `"hasNext":…}`: false once no deferred fragment is left.
    fn finish(&self, mut body: Vec<u8>, charge: crate::memory::Charge) -> Part {
        let last = self.points.is_empty();
        body.extend_from_slice(if last {
            b"\"hasNext\":false}"
        } else {
            b"\"hasNext\":true}"
        });
        Part {
            body,
            field_errors: self.field_errors,
            last,
            memory: Some(charge),
        }
    }

    /// One payload with an item per deferred fragment in `now`; the fetch errors of
    /// their payloads go to the item whose path leads to them (else the first one).
    fn subsequent(
        &mut self,
        store: &Store,
        fetch_errors: &mut [Vec<ResponseError>],
        now: &[DeferPoint],
    ) -> Part {
        let ctx = self.ctx;
        let mask = now.iter().fold(0, |m, p| m | p.defer.bit());
        let done = &self.done;
        let mut loose = in_plan_order(ctx.plan, fetch_errors, |i| {
            done[i] && payloads_of(ctx, i) & mask != 0
        });
        let mut items = Vec::with_capacity(now.len());
        let charge = ctx.memory.budget().charge();
        for point in now {
            let mut errors = Vec::new();
            let (data, nested) = writer(ctx, store, &mut errors, &charge).write_deferred(point);
            self.points.extend(nested);
            let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut loose)
                .into_iter()
                .partition(|e| under(e, &point.path));
            errors.extend(mine);
            loose = rest;
            items.push((point, data, errors));
        }
        if let Some((_, _, errors)) = items.first_mut() {
            errors.append(&mut loose);
        }
        let mut body = b"{\"incremental\":[".to_vec();
        for (n, (point, data, errors)) in items.iter().enumerate() {
            if n > 0 {
                body.push(b',');
            }
            self.field_errors |= !errors.is_empty();
            write_item(&mut body, ctx, point, data, errors);
        }
        body.extend_from_slice(b"],");
        self.finish(body, charge)
    }
}

/// A writer of one payload of `ctx`'s response, its errors going to `errors`, its
/// output charged to `charge`.
fn writer<'w, T: Transport>(
    ctx: &'w ExecutionContext<'_, T>,
    store: &'w Store,
    errors: &'w mut Vec<ResponseError>,
    charge: &'w crate::memory::Charge,
) -> Writer<'w> {
    Writer::new(store, &ctx.plan.keys, ctx.shapes, ctx.variables, errors)
        .max_bytes(ctx.max_response_bytes)
        .memory(charge)
}

/// `{"data":…,"path":[…],"label":…,"errors":[…]}`.
fn write_item<T: Transport>(
    out: &mut Vec<u8>,
    ctx: &ExecutionContext<'_, T>,
    point: &DeferPoint,
    data: &[u8],
    errors: &[ResponseError],
) {
    #[derive(Serialize)]
    struct Meta<'a> {
        path: &'a [PathSeg],
        #[serde(skip_serializing_if = "Option::is_none")]
        label: Option<&'a str>,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        errors: &'a [ResponseError],
    }
    let label = ctx.prepared.ir.defer(point.defer).label.as_deref();
    out.extend_from_slice(b"{\"data\":");
    out.extend_from_slice(data);
    out.push(b',');
    let meta = serde_json::to_vec(&Meta {
        path: &point.path,
        label,
        errors,
    })
    .expect("paths and errors serialize");
    // `{"path":…}` without its opening brace: the item's remaining members.
    out.extend_from_slice(&meta[1..]);
}

/// Whether error `e` is at or below `path`.
fn under(e: &ResponseError, path: &[PathSeg]) -> bool {
    e.path
        .as_ref()
        .is_some_and(|p| p.len() >= path.len() && p[..path.len()] == *path)
}

fn for_bits(mask: DeferMask, mut f: impl FnMut(usize)) {
    let mut m = mask;
    while m != 0 {
        let bit = m.trailing_zeros() as usize;
        f(bit);
        m &= m - 1;
    }
}
