//! FoundationDB process addresses: `10.1.2.3:4501`, `[::1]:4501:tls`,
//! `storage-1.sample.default.svc.cluster.local:4501`.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// The address of a FoundationDB process: host (IP or DNS name), port and TLS flag.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessAddress {
    /// IPv4 or IPv6 address (IPv6 without brackets) or DNS name.
    pub host: String,
    /// Port the process listens on.
    pub port: u16,
    /// Whether the address carries the `:tls` suffix.
    pub tls: bool,
}

/// Why an address could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a valid FoundationDB process address: {reason}")]
pub struct AddressParseError {
    /// The text that failed to parse.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl ProcessAddress {
    /// An address without TLS.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
            tls: false,
        }
    }

    /// An address whose host must be an IP address or a DNS name (what [`Self::parse`]
    /// accepts): a host with a space, `;` or a quote is refused, so the address is
    /// always one token of an fdbcli command.
    pub fn checked(host: &str, port: u16, tls: bool) -> Result<Self, AddressParseError> {
        let address = Self::new(host, port).with_tls(tls);
        if address.is_well_formed() {
            Ok(address)
        } else {
            Err(AddressParseError {
                input: address.to_string(),
                reason: "the host is neither an IP address nor a DNS name",
            })
        }
    }

    /// Whether the address reads back as itself: its host an IP address or a DNS name
    /// and its port not 0 (the public fields allow any text; command builders check).
    pub fn is_well_formed(&self) -> bool {
        Self::parse(&self.to_string()).is_ok_and(|parsed| parsed == *self)
    }

    /// The same address with the TLS flag set as given.
    pub fn with_tls(mut self, tls: bool) -> Self {
        self.tls = tls;
        self
    }

    /// The host as an IP address, when it is one.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }

    /// Whether the host is a DNS name rather than an IP address.
    pub fn is_dns_name(&self) -> bool {
        self.ip().is_none()
    }

    /// The host as written in an address (`[...]` around IPv6 addresses).
    pub fn host_for_display(&self) -> String {
        match self.ip() {
            Some(IpAddr::V6(_)) => format!("[{}]", self.host),
            _ => self.host.clone(),
        }
    }

    /// `host:port` without the TLS suffix (what `exclude` and `kill` match on besides the
    /// full form).
    pub fn without_flags(&self) -> String {
        format!("{}:{}", self.host_for_display(), self.port)
    }

    /// Parses an address; see the type documentation for the accepted forms.
    pub fn parse(input: &str) -> Result<Self, AddressParseError> {
        let error = |reason| AddressParseError {
            input: input.to_owned(),
            reason,
        };
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(error("the address is empty"));
        }
        let (rest, tls) = match trimmed.strip_suffix(":tls") {
            Some(rest) => (rest, true),
            None => (trimmed, false),
        };
        let (host, port_text) = if let Some(bracketed) = rest.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| error("an IPv6 address misses its closing `]`"))?;
            if host.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(error("the text in brackets is not an IPv6 address"));
            }
            let port = after
                .strip_prefix(':')
                .ok_or_else(|| error("the port is missing after the IPv6 address"))?;
            (host, port)
        } else {
            let (host, port) = rest
                .rsplit_once(':')
                .ok_or_else(|| error("the port is missing (expected HOST:PORT)"))?;
            if host.contains(':') {
                return Err(error("IPv6 addresses must be written in brackets"));
            }
            if host.is_empty() {
                return Err(error("the host is empty"));
            }
            if host.parse::<IpAddr>().is_err() && !is_dns_name(host) {
                return Err(error("the host is neither an IP address nor a DNS name"));
            }
            (host, port)
        };
        if port_text.is_empty() || !port_text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(error("the port is not a number"));
        }
        let port: u16 = port_text
            .parse()
            .map_err(|_| error("the port is out of range"))?;
        if port == 0 {
            return Err(error("the port must not be 0"));
        }
        Ok(Self {
            host: host.to_owned(),
            port,
            tls,
        })
    }
}

/// Letters, digits, `-` and `.`, labels not empty; not all-numeric (`999.1.1.1` is a
/// mistyped IPv4 address, not a name: RFC 1123 section 2.1 keeps a name from looking like
/// a dotted-decimal address).
fn is_dns_name(host: &str) -> bool {
    let numeric = |label: &str| label.bytes().all(|b| b.is_ascii_digit());
    if host.split('.').all(numeric) {
        return false;
    }
    host.split('.').all(|label| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

impl fmt::Display for ProcessAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host_for_display(), self.port)?;
        if self.tls {
            f.write_str(":tls")?;
        }
        Ok(())
    }
}

impl FromStr for ProcessAddress {
    type Err = AddressParseError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        Self::parse(input)
    }
}

crate::text_serde::serde_as_text!(ProcessAddress);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mistyped_ipv4_addresses_and_ports_are_refused() {
        for text in [
            "999.1.1.1:4501",
            "1.2.3:4501",
            "10.1.2.3:99999",
            "10.1.2.3:0",
            "1.2.3.4.5:1",
        ] {
            assert!(ProcessAddress::parse(text).is_err(), "{text}");
        }
        assert!(ProcessAddress::parse("storage-1.sample:4501").is_ok());
    }

    #[test]
    fn parses_and_prints_every_form() {
        for text in [
            "10.1.2.3:4501",
            "10.1.2.3:4501:tls",
            "[::1]:4501",
            "[fd00::12]:4500:tls",
            "sample-storage-1.sample.default.svc.cluster.local:4501",
        ] {
            assert_eq!(ProcessAddress::parse(text).unwrap().to_string(), text);
        }
        let address = ProcessAddress::parse("[fd00::12]:4500:tls").unwrap();
        assert_eq!(address.host, "fd00::12");
        assert_eq!(address.port, 4500);
        assert!(address.tls);
        assert!(!address.is_dns_name());
        assert_eq!(address.without_flags(), "[fd00::12]:4500");
    }

    #[test]
    fn rejects_malformed_addresses_with_a_reason() {
        for (text, reason) in [
            ("", "empty"),
            ("10.1.2.3", "port is missing"),
            ("10.1.2.3:", "not a number"),
            ("10.1.2.3:99999", "out of range"),
            ("10.1.2.3:0", "must not be 0"),
            ("::1:4501", "brackets"),
            ("[::1:4501", "closing"),
            ("[nope]:4501", "not an IPv6"),
            ("bad host:4501", "neither"),
            (":4501", "host is empty"),
        ] {
            let error = ProcessAddress::parse(text).unwrap_err();
            assert!(
                error.to_string().contains(reason),
                "{text:?}: {error} should mention {reason:?}"
            );
        }
    }
}
