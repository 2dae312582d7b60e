//! The gateway's pings to a WebSocket client: one every `subscriptions.ping_interval`,
//! and the connection is closed when no pong answers one within
//! `subscriptions.pong_timeout` (a peer gone without a close, a proxy that dropped it).

use std::time::Duration;
use tokio::time::Instant;

/// What is due when [`KeepAlive::deadline`] passes.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Due {
    Ping,
    /// The last ping went unanswered.
    Dead,
}

#[derive(Debug)]
pub(super) struct KeepAlive {
    interval: Option<Duration>,
    timeout: Duration,
    next_ping: Instant,
    /// When the unanswered ping's pong is due.
    awaiting: Option<Instant>,
}

impl KeepAlive {
    pub(super) fn new(interval: Option<Duration>, timeout: Duration, now: Instant) -> Self {
        Self {
            interval,
            timeout,
            next_ping: now + interval.unwrap_or_default(),
            awaiting: None,
        }
    }

    /// When something is next due; `None` with pings off.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.interval?;
        Some(self.awaiting.unwrap_or(self.next_ping))
    }

    /// The deadline passed at `now`: ping (and wait for its pong), or give up.
    pub(super) fn due(&mut self, now: Instant) -> Due {
        if self.awaiting.is_some() {
            return Due::Dead;
        }
        self.awaiting = Some(now + self.timeout);
        Due::Ping
    }

    /// A pong came: the next ping is an interval from now.
    pub(super) fn answered(&mut self, now: Instant) {
        if self.awaiting.take().is_some() {
            self.next_ping = now + self.interval.unwrap_or_default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Due, KeepAlive};
    use std::time::Duration;
    use tokio::time::Instant;

    #[test]
    fn a_ping_waits_for_its_pong_and_an_unanswered_one_ends_the_connection() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut k = KeepAlive::new(Some(10 * s), 3 * s, t0);
        assert_eq!(k.deadline(), Some(t0 + 10 * s));
        assert_eq!(k.due(t0 + 10 * s), Due::Ping);
        assert_eq!(k.deadline(), Some(t0 + 13 * s));
        k.answered(t0 + 11 * s);
        assert_eq!(k.deadline(), Some(t0 + 21 * s));
        // An unsolicited pong changes nothing.
        k.answered(t0 + 12 * s);
        assert_eq!(k.deadline(), Some(t0 + 21 * s));
        assert_eq!(k.due(t0 + 21 * s), Due::Ping);
        assert_eq!(k.due(t0 + 24 * s), Due::Dead);
    }

    #[test]
    fn without_an_interval_nothing_is_due() {
        let k = KeepAlive::new(None, Duration::from_secs(3), Instant::now());
        assert_eq!(k.deadline(), None);
    }
}
