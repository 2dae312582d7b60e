//! The client's `Cache-Control` from the subgraph responses of one request, the most
//! restrictive winning (`headers.cache_control: most_restrictive`). Parsing and
//! printing are the `headers` crate's; what "most restrictive" means is ours:
//! - `no-store` anywhere, a response without `Cache-Control`, or one that does not
//!   parse: `no-store` (nothing says the merged answer may be kept);
//! - else `no-cache` anywhere: `no-cache`, with `private` if any said it;
//! - else the smallest `max-age` (a response with none counts as 0), the smallest
//!   `s-maxage` where any set one, `private` if any said it, `public` only if all did,
//!   `must-revalidate` if any said it or `proxy-revalidate`, `no-transform` if any,
//!   `immutable` only if all.

use headers::{CacheControl, Header};
use http::HeaderValue;
use std::time::Duration;

/// What one response's `Cache-Control` allows, reduced to what the merge keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Allowance {
    no_store: bool,
    no_cache: bool,
    private: bool,
    public: bool,
    max_age: Duration,
    /// Shared caches' freshness (`s-maxage`, else `max-age`), and whether it was set.
    shared_age: Duration,
    s_max_age_set: bool,
    must_revalidate: bool,
    proxy_revalidate: bool,
    no_transform: bool,
    immutable: bool,
}

impl Allowance {
    const NO_STORE: Self = Self {
        no_store: true,
        no_cache: false,
        private: false,
        public: false,
        max_age: Duration::ZERO,
        shared_age: Duration::ZERO,
        s_max_age_set: false,
        must_revalidate: false,
        proxy_revalidate: false,
        no_transform: false,
        immutable: false,
    };

    /// One response's `Cache-Control` values (every line of it).
    fn of(values: http::header::GetAll<'_, HeaderValue>) -> Self {
        let Ok(cc) = CacheControl::decode(&mut values.iter()) else {
            return Self::NO_STORE;
        };
        // The `headers` crate drops `proxy-revalidate`; read it from the text.
        let proxy_revalidate = values.iter().filter_map(|v| v.to_str().ok()).any(|v| {
            v.split(',')
                .any(|d| d.trim().eq_ignore_ascii_case("proxy-revalidate"))
        });
        let max_age = cc.max_age().unwrap_or(Duration::ZERO);
        Self {
            no_store: cc.no_store(),
            no_cache: cc.no_cache(),
            private: cc.private(),
            public: cc.public(),
            max_age,
            shared_age: cc.s_max_age().unwrap_or(max_age),
            s_max_age_set: cc.s_max_age().is_some(),
            must_revalidate: cc.must_revalidate(),
            proxy_revalidate,
            no_transform: cc.no_transform(),
            immutable: cc.immutable(),
        }
    }

    /// What both allow.
    fn and(self, other: Self) -> Self {
        Self {
            no_store: self.no_store || other.no_store,
            no_cache: self.no_cache || other.no_cache,
            private: self.private || other.private,
            public: self.public && other.public,
            max_age: self.max_age.min(other.max_age),
            shared_age: self.shared_age.min(other.shared_age),
            s_max_age_set: self.s_max_age_set || other.s_max_age_set,
            must_revalidate: self.must_revalidate || other.must_revalidate,
            proxy_revalidate: self.proxy_revalidate || other.proxy_revalidate,
            no_transform: self.no_transform || other.no_transform,
            immutable: self.immutable && other.immutable,
        }
    }

    fn header(self) -> HeaderValue {
        let mut cc = CacheControl::new();
        if self.no_store {
            cc = cc.with_no_store();
        } else if self.no_cache {
            cc = cc.with_no_cache();
            if self.private {
                cc = cc.with_private();
            }
        } else {
            if self.private {
                cc = cc.with_private();
            } else if self.public {
                cc = cc.with_public();
            }
            cc = cc.with_max_age(self.max_age);
            if self.s_max_age_set && !self.private && self.shared_age != self.max_age {
                cc = cc.with_s_max_age(self.shared_age);
            }
            // The crate cannot print `proxy-revalidate`: `must-revalidate` binds every
            // cache, shared ones included, so it says at least as much.
            if self.must_revalidate || self.proxy_revalidate {
                cc = cc.with_must_revalidate();
            }
            if self.immutable {
                cc = cc.with_immutable();
            }
        }
        if self.no_transform {
            cc = cc.with_no_transform();
        }
        let mut values = Vec::with_capacity(1);
        cc.encode(&mut values);
        values
            .pop()
            .expect("a Cache-Control always encodes one value")
    }
}

/// `Cache-Control: no-store`, for answers that must not be kept.
pub fn no_store() -> HeaderValue {
    HeaderValue::from_static("no-store")
}

/// The merged `Cache-Control` of `responses` (each a response's header map), `None`
/// when there were none.
pub fn merge<'a>(responses: impl IntoIterator<Item = &'a http::HeaderMap>) -> Option<HeaderValue> {
    let mut merged: Option<Allowance> = None;
    for headers in responses {
        let values = headers.get_all(http::header::CACHE_CONTROL);
        let one = match values.iter().next() {
            None => Allowance::NO_STORE,
            Some(_) => Allowance::of(values),
        };
        merged = Some(merged.map_or(one, |m| m.and(one)));
    }
    merged.map(Allowance::header)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The merge of responses each given as its `Cache-Control` lines (none: absent).
    fn merged(responses: &[&[&str]]) -> Option<String> {
        let maps: Vec<http::HeaderMap> = responses
            .iter()
            .map(|lines| {
                let mut h = http::HeaderMap::new();
                for line in *lines {
                    h.append(
                        http::header::CACHE_CONTROL,
                        HeaderValue::from_str(line).expect("a header value"),
                    );
                }
                h
            })
            .collect();
        merge(&maps).map(|v| v.to_str().expect("ASCII").to_owned())
    }

    #[test]
    fn the_most_restrictive_wins() {
        let cases: &[(&[&[&str]], Option<&str>)] = &[
            (&[], None),
            (&[&["max-age=60"]], Some("max-age=60")),
            (
                &[&["public, max-age=60"], &["max-age=30"]],
                Some("max-age=30"),
            ),
            (
                &[&["public, max-age=60"], &["public, max-age=300"]],
                Some("public, max-age=60"),
            ),
            (
                &[&["max-age=60"], &["private, max-age=300"]],
                Some("private, max-age=60"),
            ),
            (&[&["max-age=60"], &["no-store"]], Some("no-store")),
            (&[&["max-age=60"], &[]], Some("no-store")),
            (&[&["max-age=60"], &["no-cache"]], Some("no-cache")),
            (&[&["private"], &["no-cache"]], Some("no-cache, private")),
            (&[&["public"]], Some("public, max-age=0")),
            (
                // Shared caches: 600 s for one, 120 s (its max-age) for the other.
                &[&["max-age=60, s-maxage=600"], &["max-age=120"]],
                Some("max-age=60, s-maxage=120"),
            ),
            (
                &[&["max-age=60, s-maxage=10"], &["max-age=120"]],
                Some("max-age=60, s-maxage=10"),
            ),
            (
                &[
                    &["max-age=60, immutable"],
                    &["max-age=60, immutable, must-revalidate"],
                ],
                Some("must-revalidate, immutable, max-age=60"),
            ),
            (
                &[&["max-age=60, immutable"], &["max-age=60"]],
                Some("max-age=60"),
            ),
            // Two lines of one response are one header.
            (&[&["public", "max-age=5"]], Some("public, max-age=5")),
            (&[&["max-age=sixty"]], Some("no-store")),
        ];
        for (responses, want) in cases {
            assert_eq!(merged(responses).as_deref(), *want, "merging {responses:?}");
        }
    }
}
