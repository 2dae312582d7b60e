//! Stage 6, authorization: which of the supergraph's `@authenticated`, `@requiresScopes`
//! and `@policy` requirements a request's JWT claims fail, as a mask of denied
//! requirements (see [`crate::auth::authz`] for the requirements per operation and the
//! plans per mask). With `reject_unauthorized`, a request selecting a denied field is
//! refused whole instead.

use super::error::RequestError;
use super::operation::CachedOperation;
use super::plan_cache::State;
use crate::auth::Claims;
use crate::auth::authz::{AuthMask, OperationAuth, PolicyGrants, UNAUTHORIZED_CODE};
use crate::operation::{ConditionValues, OpFieldId, OpIr, OpSel};
use graphfleet_config::Config;

/// The `@policy` policies `cached` touches (none when authorization is off), for a
/// coprocessor to decide.
pub fn policies(config: &Config, state: &State, cached: &CachedOperation) -> Vec<String> {
    let directives = &state.supergraph.auth;
    if directives.is_empty() || !config.authorization.enabled {
        return Vec::new();
    }
    let auth = cached
        .auth
        .get_or_init(|| OperationAuth::of(&state.supergraph, &cached.prepared.ir));
    auth.policies(directives)
}

/// The requirements a request with `claims` fails for `cached` (empty when the supergraph
/// has no authorization directive or `authorization.enabled` is off: nothing is
/// evaluated then); an error when `reject_unauthorized` refuses it because it selects
/// a denied field that its condition variables (`values`) do not exclude.
pub fn authorize(
    config: &Config,
    state: &State,
    cached: &CachedOperation,
    claims: Option<&Claims>,
    grants: Option<&PolicyGrants>,
    values: ConditionValues,
) -> Result<AuthMask, RequestError> {
    let directives = &state.supergraph.auth;
    if directives.is_empty() || !config.authorization.enabled {
        return Ok(AuthMask::default());
    }
    let auth = cached
        .auth
        .get_or_init(|| OperationAuth::of(&state.supergraph, &cached.prepared.ir));
    let mask = auth.denied(directives, &config.authorization, claims, grants)?;
    if !mask.is_empty() && config.authorization.reject_unauthorized {
        let ir = &cached.prepared.ir;
        let requested = requested_denied(ir, values, &auth.denied_fields(mask));
        if !requested.is_empty() {
            return Err(rejection(ir, &requested));
        }
    }
    Ok(mask)
}

/// A subscription whose root field `mask` denies has no event stream left to subscribe
/// to: it is refused as `reject_unauthorized` refuses, whatever that says (a denied
/// field deeper down is `null` with an error in each event instead).
pub fn subscription_root(
    cached: &CachedOperation,
    mask: AuthMask,
    values: ConditionValues,
) -> Result<(), RequestError> {
    let Some(auth) = cached.auth.get().filter(|_| !mask.is_empty()) else {
        return Ok(());
    };
    let ir = &cached.prepared.ir;
    let denied = auth.denied_fields(mask);
    let mut root = Vec::new();
    let mut sets = vec![ir.root()];
    while let Some(set) = sets.pop() {
        for sel in ir.selset(set) {
            match sel {
                OpSel::Field(id) => {
                    let excluded = ir.field(*id).conditions.excluded(ir, Some(values));
                    if !excluded && denied.get(id.0 as usize).copied().unwrap_or(false) {
                        root.push(*id);
                    }
                }
                // Fragments on the root type select root fields too.
                OpSel::Fragment {
                    conditions,
                    selection,
                    ..
                } if !conditions.excluded(ir, Some(values)) => sets.push(*selection),
                OpSel::Fragment { .. } => {}
            }
        }
    }
    if root.is_empty() {
        return Ok(());
    }
    root.sort();
    Err(rejection(ir, &root))
}

/// The denied fields (`denied`, by `OpFieldId`) a request with condition values `values`
/// selects: those no `@skip`/`@include` (of theirs or of an enclosing selection)
/// excludes, outside the sub-selections of other denied fields.
fn requested_denied(ir: &OpIr, values: ConditionValues, denied: &[bool]) -> Vec<OpFieldId> {
    let mut out = Vec::new();
    let mut seen = vec![false; ir.selsets.len()];
    let mut stack = vec![ir.root()];
    while let Some(set) = stack.pop() {
        if std::mem::replace(&mut seen[set.0 as usize], true) {
            continue;
        }
        for sel in ir.selset(set) {
            match sel {
                OpSel::Field(id) => {
                    let field = ir.field(*id);
                    if field.conditions.excluded(ir, Some(values)) {
                        continue;
                    }
                    if denied.get(id.0 as usize).copied().unwrap_or(false) {
                        out.push(*id);
                    } else if let Some(child) = field.selection {
                        stack.push(child);
                    }
                }
                OpSel::Fragment {
                    conditions,
                    selection,
                    ..
                } => {
                    if !conditions.excluded(ir, Some(values)) {
                        stack.push(*selection);
                    }
                }
            }
        }
    }
    out.sort();
    out
}

/// The error refusing a whole request (`reject_unauthorized`), naming what it may not
/// read.
fn rejection(ir: &OpIr, requested: &[OpFieldId]) -> RequestError {
    let mut names: Vec<String> = Vec::new();
    for id in requested {
        let f = ir.field(*id);
        let name = format!("{}.{}", f.parent_type, f.name);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    RequestError::coded(
        UNAUTHORIZED_CODE,
        format!(
            "Unauthorized field or type: this request may not read {}",
            names.join(", ")
        ),
    )
}
