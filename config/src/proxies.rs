//! `traffic.trusted_proxies`: the proxies whose forwarding headers name the client, and
//! `traffic.client_address_header`: which header they name it in.

use ipnet::IpNet;
use std::net::IpAddr;

/// Parsed `traffic.trusted_proxies`: CIDR ranges, a bare address standing for itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Every entry parsed, or the first one that is neither a CIDR range nor an address,
    /// with its index and why.
    pub fn parse(entries: &[String]) -> Result<Self, (usize, String)> {
        entries
            .iter()
            .enumerate()
            .map(|(i, entry)| parse_entry(entry).map_err(|why| (i, why)))
            .collect::<Result<_, _>>()
            .map(Self)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is one of the trusted proxies (an IPv4-mapped IPv6 address counts
    /// as its IPv4 address, as dual-stack listeners report IPv4 peers).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }
}

/// Parsed `traffic.client_address_header`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ClientAddressHeader {
    /// `X-Forwarded-For` when present, else `Forwarded: for=`.
    #[default]
    Auto,
    /// `Forwarded: for=` (RFC 7239) alone; `X-Forwarded-For` is ignored.
    Forwarded,
    /// A header holding addresses, comma-separated, each hop appending its peer
    /// (`x-forwarded-for`), or a single one a proxy overwrites (`x-real-ip`); lowercase.
    List(String),
}

impl ClientAddressHeader {
    /// `auto`, `forwarded`, or a header name (case-insensitive).
    pub fn parse(value: &str) -> Result<Self, String> {
        let lower = value.trim().to_ascii_lowercase();
        match lower.as_str() {
            "auto" => Ok(Self::Auto),
            "forwarded" => Ok(Self::Forwarded),
            "" => Err("must be `auto`, `forwarded` or a header name".to_owned()),
            name if name.bytes().all(is_token_byte) => Ok(Self::List(name.to_owned())),
            _ => Err(format!(
                "{value:?} is not a header name (letters, digits and `-`, e.g. x-real-ip), \
                 `auto` or `forwarded`"
            )),
        }
    }
}

/// A byte of an HTTP token (RFC 9110 `tchar`), as header names are.
pub(crate) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn parse_entry(entry: &str) -> Result<IpNet, String> {
    let entry = entry.trim();
    if let Ok(net) = entry.parse::<IpNet>() {
        // `10.1.2.3/8` most likely means a typo: only the range's own address is accepted.
        if net.trunc() != net {
            return Err(format!(
                "{entry:?} has host bits set; write the range as {}",
                net.trunc()
            ));
        }
        return Ok(net);
    }
    entry
        .parse::<IpAddr>()
        .map(IpNet::from)
        .map_err(|_| format!("{entry:?} is not a CIDR range (10.0.0.0/8, fd00::/8) or an address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(entries: &[&str]) -> Result<TrustedProxies, (usize, String)> {
        TrustedProxies::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn ranges_and_addresses() {
        let proxies = parse(&["10.0.0.0/8", "127.0.0.1", "fd00::/8"]).expect("valid");
        for inside in ["10.9.8.7", "127.0.0.1", "fd12::1", "::ffff:10.0.0.1"] {
            assert!(
                proxies.contains(inside.parse().expect("an address")),
                "{inside}"
            );
        }
        for outside in ["11.0.0.1", "127.0.0.2", "fe80::1"] {
            assert!(
                !proxies.contains(outside.parse().expect("an address")),
                "{outside}"
            );
        }
    }

    #[test]
    fn client_address_headers() {
        let parse = ClientAddressHeader::parse;
        assert_eq!(parse("auto"), Ok(ClientAddressHeader::Auto));
        assert_eq!(parse("Forwarded"), Ok(ClientAddressHeader::Forwarded));
        assert_eq!(
            parse("X-Real-IP"),
            Ok(ClientAddressHeader::List("x-real-ip".to_owned()))
        );
        assert!(parse("").is_err());
        let why = parse("x real ip").expect_err("a space");
        assert!(why.contains("is not a header name"), "{why}");
    }

    #[test]
    fn bad_entries_are_named() {
        assert_eq!(
            parse(&["10.0.0.0/8", "ten"])
                .map(|_| ())
                .expect_err("ten")
                .0,
            1
        );
        let (_, why) = parse(&["10.1.2.3/8"]).map(|_| ()).expect_err("host bits");
        assert_eq!(
            why,
            "\"10.1.2.3/8\" has host bits set; write the range as 10.0.0.0/8"
        );
    }
}
