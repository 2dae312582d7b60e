//! Progress lines on stderr, shared by every mode.

/// Prints `msg` to stderr, timestamped.
pub fn progress(msg: impl AsRef<str>) {
    eprintln!(
        "[bench {}] {}",
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        msg.as_ref()
    );
}
