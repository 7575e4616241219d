//! The blob store URL that `fdbbackup` and `fdbrestore` are given, built from its typed
//! parts (account, backup name, bucket, URL parameters), each percent-encoded so that even
//! a part that skipped validation cannot change the bucket or add a parameter. A leaf:
//! the API types build their URL with it and validation checks the same parts with it.

/// A blob store account split into its parts: `[<user>@]<host>[:<port>]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobStoreAccount<'a> {
    /// The user (access key), when given.
    pub user: Option<&'a str>,
    /// The host: a DNS name, an IPv4 address or a bracketed IPv6 address.
    pub host: &'a str,
    /// The port, when given.
    pub port: Option<u16>,
}

/// Whether `byte` is one of the URL's unreserved characters.
pub(crate) fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-._~".contains(&byte)
}

fn is_dns_name(host: &str) -> bool {
    host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn is_host(host: &str) -> bool {
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => host.parse::<std::net::Ipv4Addr>().is_ok() || is_dns_name(host),
    }
}

/// Splits and checks an account name; the error says what is wrong.
pub fn parse_account(text: &str) -> Result<BlobStoreAccount<'_>, &'static str> {
    let (user, rest) = match text.rsplit_once('@') {
        Some((user, rest)) => (Some(user), rest),
        None => (None, text),
    };
    if let Some(user) = user
        && (user.is_empty() || !user.bytes().all(is_unreserved))
    {
        return Err("the user before `@` must be letters, digits, `-`, `.`, `_` or `~`");
    }
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port))
            if !host.ends_with(':') && (!host.starts_with('[') || host.ends_with(']')) =>
        {
            (host, Some(port))
        }
        _ => (rest, None),
    };
    if !is_host(host) {
        return Err("the host must be a DNS name or an IP address (IPv6 in brackets)");
    }
    let port = match port {
        None => None,
        Some(port) => match port.parse::<u16>() {
            Ok(number) if number > 0 && port.bytes().all(|b| b.is_ascii_digit()) => Some(number),
            _ => return Err("the port must be a number from 1 to 65535"),
        },
    };
    Ok(BlobStoreAccount { user, host, port })
}

/// Percent-encodes every byte of `part` outside the URL's unreserved characters and
/// `keep`.
pub fn percent_encode(part: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(part.len());
    for byte in part.bytes() {
        if is_unreserved(byte) || keep.contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The backup URL, `blobstore://<account>/<backup name>?bucket=<bucket>&<parameters>`,
/// each part percent-encoded so that it stays that part: a valid part is unchanged.
pub fn backup_url(
    account: &str,
    backup_name: &str,
    bucket: &str,
    url_parameters: &[String],
) -> String {
    let account = match parse_account(account) {
        Ok(parts) => {
            let mut text = String::new();
            if let Some(user) = parts.user {
                text.push_str(&percent_encode(user, &[]));
                text.push('@');
            }
            text.push_str(parts.host);
            if let Some(port) = parts.port {
                text.push_str(&format!(":{port}"));
            }
            text
        }
        // Invalid (validation refuses it): encoded whole, it cannot add a path or query.
        Err(_) => percent_encode(account, &[]),
    };
    let mut url = format!(
        "blobstore://{account}/{}?bucket={}",
        percent_encode(backup_name, &[]),
        percent_encode(bucket, &[])
    );
    for parameter in url_parameters {
        let (key, value) = parameter.split_once('=').unwrap_or((parameter, ""));
        if key.trim() == "bucket" {
            // Refused at validation; left out here so that it can never change the bucket.
            continue;
        }
        url.push('&');
        url.push_str(&percent_encode(key, &[]));
        url.push('=');
        url.push_str(&percent_encode(value, b":"));
    }
    url
}
