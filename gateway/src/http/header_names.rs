//! Header names as the config writes them, compiled once: what the request and the
//! response header rules both match against.

use http::HeaderName;
use regex::Regex;

/// Which header names a rule applies to.
#[derive(Debug)]
pub(super) enum Names {
    One(HeaderName),
    Matching(Regex),
}

impl Names {
    pub(super) fn compile(named: Option<&str>, matching: Option<&str>) -> Self {
        match (named, matching) {
            (Some(name), _) => Names::One(header_name(name)),
            (None, Some(pattern)) => {
                Names::Matching(Regex::new(pattern).expect("validated when the config loaded"))
            }
            (None, None) => unreachable!("validated when the config loaded: one of named/matching"),
        }
    }

    pub(super) fn matches(&self, name: &HeaderName) -> bool {
        match self {
            Names::One(n) => n == name,
            Names::Matching(re) => re.is_match(name.as_str()),
        }
    }
}

pub(super) fn header_name(name: &str) -> HeaderName {
    HeaderName::from_bytes(name.as_bytes()).expect("validated when the config loaded")
}
