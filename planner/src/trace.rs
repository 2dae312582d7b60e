//! Pipeline spans (parse, validate, plan, fetch...): created only while trace export is
//! on, so the hot path otherwise pays one relaxed atomic load per span site. The
//! gateway's telemetry switches export on; every stage crate uses [`otel_span!`].

use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether pipeline spans are exported.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Switch pipeline spans on or off (the gateway's telemetry does, once export is set up).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// An INFO span when export is on, else a disabled span that costs nothing.
#[macro_export]
macro_rules! otel_span {
    ($($args:tt)*) => {
        if $crate::trace::enabled() {
            ::tracing::info_span!(target: "graphfleet::pipeline", $($args)*)
        } else {
            ::tracing::Span::none()
        }
    };
}
