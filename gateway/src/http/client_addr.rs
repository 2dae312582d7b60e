//! The client a request counts against in the per-client quotas (subscriptions,
//! WebSockets): the TCP peer, or, when the peer is a trusted proxy
//! (`traffic.trusted_proxies`), the address its forwarding headers name. Each proxy
//! appends the address it received from, so the list is read from the right and the
//! first address no trusted proxy holds is the client: entries left of it are whatever
//! the client wrote, never trusted.

use graphfleet_config::{ClientAddressHeader, TrustedProxies};
use hyper::HeaderMap;
use hyper::header::{FORWARDED, HeaderName};
use std::net::IpAddr;

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// `traffic.trusted_proxies` and `traffic.client_address_header`, parsed.
#[derive(Debug, Clone, Default)]
pub struct ClientAddressing {
    proxies: TrustedProxies,
    header: Header,
}

#[derive(Debug, Clone, Default)]
enum Header {
    #[default]
    Auto,
    Forwarded,
    List(HeaderName),
}

impl ClientAddressing {
    /// From validated settings (`graphfleet_config::validate` checks both first).
    pub fn new(proxies: &[String], header: &str) -> Self {
        let proxies = TrustedProxies::parse(proxies)
            .expect("traffic.trusted_proxies is validated before a gateway is made");
        let header = match ClientAddressHeader::parse(header)
            .expect("traffic.client_address_header is validated before a gateway is made")
        {
            ClientAddressHeader::Auto => Header::Auto,
            ClientAddressHeader::Forwarded => Header::Forwarded,
            ClientAddressHeader::List(name) => Header::List(
                HeaderName::from_bytes(name.as_bytes())
                    .expect("a validated header name is an HTTP header name"),
            ),
        };
        Self { proxies, header }
    }

    /// The client behind `peer`: the address the configured header names, read only
    /// when `peer` is trusted.
    pub fn client_of(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let trusted = &self.proxies;
        if trusted.is_empty() || !trusted.contains(peer) {
            return peer;
        }
        let hops: Vec<Option<IpAddr>> = match &self.header {
            Header::Auto if headers.contains_key(&X_FORWARDED_FOR) => {
                list(headers, &X_FORWARDED_FOR).map(parse_hop).collect()
            }
            Header::Auto | Header::Forwarded => {
                list(headers, &FORWARDED).map(forwarded_for).collect()
            }
            Header::List(name) => list(headers, name).map(parse_hop).collect(),
        };
        // From the right: skip trusted proxies; the first other address is the client. One
        // that is not an address (`unknown`, garbage) ends the walk at the last proxy.
        let mut client = peer;
        for hop in hops.into_iter().rev() {
            let Some(ip) = hop else { break };
            client = ip;
            if !trusted.contains(ip) {
                break;
            }
        }
        client
    }
}

/// The comma-separated entries of every `name` header, in order.
fn list<'a>(headers: &'a HeaderMap, name: &HeaderName) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(name)
        .iter()
        .flat_map(|v| v.to_str().unwrap_or("").split(','))
        .map(str::trim)
        .filter(|e| !e.is_empty())
}

/// `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1` or `[2001:db8::1]:4711`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim().trim_matches('"');
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = hop.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    let (host, port) = hop.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse().ok()
}

/// The `for=` of one `Forwarded` element (`for=192.0.2.60;proto=http;by=…`).
fn forwarded_for(element: &str) -> Option<IpAddr> {
    element.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        if key.trim().eq_ignore_ascii_case("for") {
            parse_hop(value)
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(proxies: &[&str], peer: &str, headers: &[(&str, &str)]) -> String {
        client_by("auto", proxies, peer, headers)
    }

    fn client_by(header: &str, proxies: &[&str], peer: &str, headers: &[(&str, &str)]) -> String {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).expect("a header name"),
                v.parse().expect("a header value"),
            );
        }
        let peer = peer.parse().expect("an address");
        let proxies: Vec<String> = proxies.iter().map(|e| e.to_string()).collect();
        ClientAddressing::new(&proxies, header)
            .client_of(peer, &map)
            .to_string()
    }

    #[test]
    fn the_right_most_untrusted_address_is_the_client() {
        let xff = |v| [("x-forwarded-for", v)];
        let proxies = ["10.0.0.0/8"];
        assert_eq!(
            client(&proxies, "10.0.0.1", &xff("203.0.113.9")),
            "203.0.113.9"
        );
        // A client's own forged entries sit left of what the proxies appended.
        let forged = xff("1.2.3.4, 203.0.113.9, 10.0.0.7");
        assert_eq!(client(&proxies, "10.0.0.1", &forged), "203.0.113.9");
        // Two header lines read as one list.
        let lines = [
            ("x-forwarded-for", "1.2.3.4"),
            ("x-forwarded-for", "198.51.100.2"),
        ];
        assert_eq!(client(&proxies, "10.0.0.1", &lines), "198.51.100.2");
        // Not trusted: the header is the client's word, ignored.
        assert_eq!(client(&proxies, "192.0.2.1", &xff("1.2.3.4")), "192.0.2.1");
        assert_eq!(client(&[], "10.0.0.1", &xff("1.2.3.4")), "10.0.0.1");
        // All trusted: the left-most; garbage ends the walk at the last proxy.
        assert_eq!(client(&proxies, "10.0.0.1", &xff("10.0.0.9")), "10.0.0.9");
        let garbage = xff("1.2.3.4, unknown, 10.0.0.9");
        assert_eq!(client(&proxies, "10.0.0.1", &garbage), "10.0.0.9");
        assert_eq!(client(&proxies, "10.0.0.1", &[]), "10.0.0.1");
    }

    #[test]
    fn forwarded_for_when_there_is_no_x_forwarded_for() {
        let proxies = ["10.0.0.0/8"];
        let fwd = [(
            "forwarded",
            r#"for=1.2.3.4, for="[2001:db8::7]:4711";proto=https, for=10.0.0.2;by=10.0.0.1"#,
        )];
        assert_eq!(client(&proxies, "10.0.0.1", &fwd), "2001:db8::7");
        assert_eq!(parse_hop("192.0.2.1:80"), "192.0.2.1".parse().ok());
    }

    #[test]
    fn the_configured_header_alone_is_read() {
        let proxies = ["10.0.0.0/8"];
        let both = [
            ("x-forwarded-for", "1.2.3.4"),
            ("forwarded", "for=198.51.100.2"),
            ("x-real-ip", "203.0.113.5"),
        ];
        assert_eq!(client_by("auto", &proxies, "10.0.0.1", &both), "1.2.3.4");
        // A proxy that sets only `Forwarded` need not strip a client's X-Forwarded-For.
        let forwarded = client_by("forwarded", &proxies, "10.0.0.1", &both);
        assert_eq!(forwarded, "198.51.100.2");
        let real_ip = client_by("X-Real-IP", &proxies, "10.0.0.1", &both);
        assert_eq!(real_ip, "203.0.113.5");
        // Named but absent: the proxy itself.
        let absent = client_by("true-client-ip", &proxies, "10.0.0.1", &both);
        assert_eq!(absent, "10.0.0.1");
    }
}
