//! FoundationDB peer verification rules (the sidecar's `--tls-verify-peers`): parsing
//! and matching. Here rather than in the sidecar so that the spec validation refuses
//! `sidecarContainer.peerVerificationRules` the sidecar would refuse at start.
//!
//! Syntax: alternatives separated by `;` or `|` (any one may match); inside an
//! alternative, conditions separated by `,` (all must match). A condition is
//! `[Scope.]Field[<|>]=Value`:
//! - Scope `S`/`Subject` (default), `I`/`Issuer`, `R`/`Root`.
//! - Fields `CN C L ST O OU UID DC` compare with the distinguished name entries of that
//!   scope (any entry of the field may match); `subjectAltName` compares with
//!   `TYPE:value` alternative names (`DNS`, `IP` or `IP Address`, `EMAIL`, `URI`; IP
//!   addresses compare as addresses).
//! - The key suffix `<` means "ends with", `>` "starts with"; otherwise equality.
//! - `\` escapes the next character in a value (`\,` `\;` `\|` `\\`).
//!
//! Empty rules accept any certificate that chains to the CA.

use std::fmt;
use std::net::IpAddr;

/// Which certificate of the chain a condition looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The peer's own certificate (its subject name and subjectAltName).
    Subject,
    /// The issuer name of the peer's certificate (and its issuerAltName).
    Issuer,
    /// The root CA certificate the chain ends at.
    Root,
}

/// A distinguished name attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DnField {
    /// commonName.
    CommonName,
    /// countryName.
    Country,
    /// localityName.
    Locality,
    /// stateOrProvinceName.
    State,
    /// organizationName.
    Organization,
    /// organizationalUnitName.
    OrganizationalUnit,
    /// userId.
    UserId,
    /// domainComponent.
    DomainComponent,
}

impl DnField {
    fn from_key(key: &str) -> Option<Self> {
        Some(match key {
            "CN" => Self::CommonName,
            "C" => Self::Country,
            "L" => Self::Locality,
            "ST" => Self::State,
            "O" => Self::Organization,
            "OU" => Self::OrganizationalUnit,
            "UID" => Self::UserId,
            "DC" => Self::DomainComponent,
            _ => return None,
        })
    }
}

/// A subjectAltName entry type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SanType {
    /// dNSName.
    Dns,
    /// iPAddress.
    Ip,
    /// rfc822Name.
    Email,
    /// uniformResourceIdentifier.
    Uri,
}

impl SanType {
    fn from_key(key: &str) -> Option<Self> {
        Some(match key.to_ascii_uppercase().as_str() {
            "DNS" => Self::Dns,
            // "IP Address" is how OpenSSL prints iPAddress entries.
            "IP" | "IP ADDRESS" => Self::Ip,
            "EMAIL" => Self::Email,
            "URI" => Self::Uri,
            _ => return None,
        })
    }
}

/// How a value is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// Equal.
    Exact,
    /// The certificate value starts with the rule value (`>`).
    Prefix,
    /// The certificate value ends with the rule value (`<`).
    Suffix,
}

impl MatchKind {
    fn matches(self, actual: &str, expected: &str) -> bool {
        match self {
            Self::Exact => actual == expected,
            Self::Prefix => actual.starts_with(expected),
            Self::Suffix => actual.ends_with(expected),
        }
    }
}

/// What a condition tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Criterion {
    /// A distinguished name field.
    Dn(DnField),
    /// An alternative name of the given type.
    AltName(SanType),
}

/// One `[Scope.]Field=Value` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// The certificate looked at.
    pub scope: Scope,
    /// The field tested.
    pub criterion: Criterion,
    /// The comparison.
    pub kind: MatchKind,
    /// The expected value (unescaped).
    pub value: String,
}

/// Parsed peer verification rules: a list of alternatives, each a list of conditions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerRules {
    /// Alternatives; empty means "accept any certificate signed by the CA".
    pub alternatives: Vec<Vec<Condition>>,
}

/// Why the rules do not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rule {alternative} condition {condition:?}: {reason}")]
pub struct RuleParseError {
    /// 1-based index of the alternative.
    pub alternative: usize,
    /// The condition text.
    pub condition: String,
    /// What is wrong.
    pub reason: String,
}

/// The identity data of a verified peer chain that rules are matched against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerIdentity {
    /// Subject DN entries of the peer certificate.
    pub subject: Vec<(DnField, String)>,
    /// Issuer DN entries of the peer certificate.
    pub issuer: Vec<(DnField, String)>,
    /// Subject DN entries of the root certificate.
    pub root: Vec<(DnField, String)>,
    /// subjectAltName entries of the peer certificate.
    pub subject_alt_names: Vec<(SanType, String)>,
    /// issuerAltName entries of the peer certificate.
    pub issuer_alt_names: Vec<(SanType, String)>,
    /// subjectAltName entries of the root certificate.
    pub root_alt_names: Vec<(SanType, String)>,
}

/// Splits on unescaped separator characters, keeping escapes in the pieces.
fn split_unescaped<'a>(text: &'a str, separators: &[char]) -> Vec<&'a str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if separators.contains(&c) {
            pieces.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    pieces.push(&text[start..]);
    pieces
}

fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.push(chars.next().ok_or("value ends with a lone '\\'")?);
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

impl PeerRules {
    /// Parses rules text; blank text gives the accept-any rules.
    pub fn parse(text: &str) -> Result<Self, RuleParseError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut alternatives = Vec::new();
        for (index, alternative) in split_unescaped(text, &[';', '|']).into_iter().enumerate() {
            let mut conditions = Vec::new();
            for condition in split_unescaped(alternative, &[',']) {
                let err = |reason: &str| RuleParseError {
                    alternative: index + 1,
                    condition: condition.to_owned(),
                    reason: reason.to_owned(),
                };
                conditions.push(parse_condition(condition.trim()).map_err(|r| err(&r))?);
            }
            alternatives.push(conditions);
        }
        Ok(Self { alternatives })
    }

    /// Whether no rule restricts the peer.
    pub fn accepts_any(&self) -> bool {
        self.alternatives.is_empty()
    }

    /// Whether `peer` satisfies at least one alternative.
    pub fn matches(&self, peer: &PeerIdentity) -> bool {
        self.accepts_any()
            || self
                .alternatives
                .iter()
                .any(|conditions| conditions.iter().all(|c| c.matches(peer)))
    }
}

fn parse_condition(text: &str) -> Result<Condition, String> {
    if text.is_empty() {
        return Err("empty condition".into());
    }
    let (key, raw_value) = text.split_once('=').ok_or("expected [Scope.]Field=Value")?;
    let (key, kind) = if let Some(k) = key.strip_suffix('<') {
        (k, MatchKind::Suffix)
    } else if let Some(k) = key.strip_suffix('>') {
        (k, MatchKind::Prefix)
    } else {
        (key, MatchKind::Exact)
    };
    let (scope, field) = match key.split_once('.') {
        None => (Scope::Subject, key),
        Some((scope, field)) => (
            match scope {
                "S" | "Subject" => Scope::Subject,
                "I" | "Issuer" => Scope::Issuer,
                "R" | "Root" => Scope::Root,
                other => return Err(format!("unknown scope {other:?} (expected S, I or R)")),
            },
            field,
        ),
    };
    let value = unescape(raw_value)?;
    let criterion = if field == "subjectAltName" {
        let (san_type, san_value) = value
            .split_once(':')
            .ok_or("subjectAltName values are TYPE:value, e.g. DNS:fdb.example.com")?;
        let san_type = SanType::from_key(san_type).ok_or_else(|| {
            format!("unknown subjectAltName type {san_type:?} (expected DNS, IP, EMAIL or URI)")
        })?;
        return Ok(Condition {
            scope,
            criterion: Criterion::AltName(san_type),
            kind,
            value: san_value.to_owned(),
        });
    } else {
        Criterion::Dn(DnField::from_key(field).ok_or_else(|| {
            format!(
                "unknown field {field:?} (expected CN, C, L, ST, O, OU, UID, DC or subjectAltName)"
            )
        })?)
    };
    Ok(Condition {
        scope,
        criterion,
        kind,
        value,
    })
}

impl Condition {
    /// Whether `peer` satisfies this condition.
    pub fn matches(&self, peer: &PeerIdentity) -> bool {
        match &self.criterion {
            Criterion::Dn(field) => {
                let names = match self.scope {
                    Scope::Subject => &peer.subject,
                    Scope::Issuer => &peer.issuer,
                    Scope::Root => &peer.root,
                };
                names
                    .iter()
                    .any(|(f, v)| f == field && self.kind.matches(v, &self.value))
            }
            Criterion::AltName(san_type) => {
                let names = match self.scope {
                    Scope::Subject => &peer.subject_alt_names,
                    Scope::Issuer => &peer.issuer_alt_names,
                    Scope::Root => &peer.root_alt_names,
                };
                names.iter().any(|(t, v)| {
                    t == san_type
                        && if *san_type == SanType::Ip && self.kind == MatchKind::Exact {
                            same_ip(v, &self.value)
                        } else {
                            self.kind.matches(v, &self.value)
                        }
                })
            }
        }
    }
}

/// Exact comparison of IP alternative names as addresses, so that the spellings of one
/// address match (`fd00::1` and `FD00:0:0:0:0:0:0:1`); text that is not an address is
/// compared as written.
fn same_ip(actual: &str, expected: &str) -> bool {
    match (
        actual.trim().parse::<IpAddr>(),
        expected.trim().parse::<IpAddr>(),
    ) {
        (Ok(actual), Ok(expected)) => actual == expected,
        _ => actual == expected,
    }
}

impl fmt::Display for PeerRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} alternative(s)", self.alternatives.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> PeerIdentity {
        PeerIdentity {
            subject: vec![
                (DnField::CommonName, "fdb-operator".into()),
                (DnField::Organization, "Example, Inc.".into()),
                (DnField::OrganizationalUnit, "db".into()),
                (DnField::OrganizationalUnit, "platform".into()),
                (DnField::DomainComponent, "example".into()),
            ],
            issuer: vec![(DnField::CommonName, "Intermediate CA".into())],
            root: vec![
                (DnField::CommonName, "Root CA".into()),
                (DnField::Country, "US".into()),
            ],
            subject_alt_names: vec![
                (SanType::Dns, "operator.fdb.svc.cluster.local".into()),
                (SanType::Ip, "10.1.2.3".into()),
            ],
            issuer_alt_names: vec![],
            root_alt_names: vec![(SanType::Uri, "spiffe://example/root".into())],
        }
    }

    fn matches(rules: &str) -> bool {
        PeerRules::parse(rules).unwrap().matches(&peer())
    }

    #[test]
    fn empty_rules_accept_anything() {
        assert!(PeerRules::parse("").unwrap().accepts_any());
        assert!(
            PeerRules::parse("  ")
                .unwrap()
                .matches(&PeerIdentity::default())
        );
    }

    #[test]
    fn default_scope_is_subject_and_fields_match_exactly() {
        assert!(matches("CN=fdb-operator"));
        assert!(matches("S.CN=fdb-operator"));
        assert!(matches("Subject.CN=fdb-operator"));
        assert!(!matches("CN=fdb-operato"));
        assert!(!matches("CN=Intermediate CA"));
    }

    #[test]
    fn scopes_select_the_certificate() {
        assert!(matches("I.CN=Intermediate CA"));
        assert!(matches("Issuer.CN=Intermediate CA"));
        assert!(matches("R.CN=Root CA,R.C=US"));
        assert!(matches("Root.C=US"));
        assert!(!matches("R.CN=Intermediate CA"));
    }

    #[test]
    fn conjunctions_need_every_condition() {
        assert!(matches("CN=fdb-operator,I.CN=Intermediate CA"));
        assert!(!matches("CN=fdb-operator,I.CN=Other CA"));
    }

    #[test]
    fn alternatives_with_semicolon_or_bar() {
        assert!(matches("CN=nobody;CN=fdb-operator"));
        assert!(matches("CN=nobody|CN=fdb-operator"));
        assert!(!matches("CN=nobody|CN=someone;O=Other"));
    }

    #[test]
    fn repeated_fields_match_any_entry() {
        assert!(matches("OU=platform"));
        assert!(matches("OU=db,DC=example"));
    }

    #[test]
    fn prefix_and_suffix_matching() {
        assert!(matches("CN>=fdb-"));
        assert!(matches("CN<=-operator"));
        assert!(!matches("CN>=operator"));
        assert!(matches("subjectAltName<=DNS:.svc.cluster.local"));
        assert!(matches("S.subjectAltName>=DNS:operator."));
        assert!(!matches("subjectAltName>=DNS:other."));
    }

    #[test]
    fn ip_alt_names_compare_as_addresses() {
        let mut peer = peer();
        peer.subject_alt_names = vec![(SanType::Ip, "fd00::1".into())];
        let check = |rules: &str| PeerRules::parse(rules).unwrap().matches(&peer);
        assert!(check("S.subjectAltName=IP:FD00:0:0:0:0:0:0:1"));
        assert!(check("S.subjectAltName=IP Address:fd00:0::1"));
        assert!(check("S.subjectAltName=IP:fd00::1"));
        assert!(!check("S.subjectAltName=IP:fd00::2"));
        assert!(!check("S.subjectAltName=IP:not-an-address"));
    }

    #[test]
    fn subject_alt_names_by_type() {
        assert!(matches("subjectAltName=DNS:operator.fdb.svc.cluster.local"));
        assert!(matches("subjectAltName=IP:10.1.2.3"));
        assert!(matches("subjectAltName=ip:10.1.2.3"));
        assert!(matches("subjectAltName=IP Address:10.1.2.3"));
        assert!(!matches("subjectAltName=IP Address:10.1.2.4"));
        assert!(!matches("subjectAltName=DNS:10.1.2.3"));
        assert!(matches("R.subjectAltName=URI:spiffe://example/root"));
        assert!(!matches(
            "I.subjectAltName=DNS:operator.fdb.svc.cluster.local"
        ));
    }

    #[test]
    fn escapes_allow_separators_in_values() {
        assert!(matches(r"O=Example\, Inc."));
        let rules = PeerRules::parse(r"CN=a\;b\|c\\d").unwrap();
        assert_eq!(rules.alternatives[0][0].value, r"a;b|c\d");
    }

    #[test]
    fn parse_errors_are_clear() {
        let err = PeerRules::parse("CN=a;X.CN=b").unwrap_err();
        assert_eq!(err.alternative, 2);
        assert!(err.to_string().contains("unknown scope \"X\""), "{err}");
        let err = PeerRules::parse("CNN=a").unwrap_err();
        assert!(err.to_string().contains("unknown field \"CNN\""), "{err}");
        let err = PeerRules::parse("CN").unwrap_err();
        assert!(
            err.to_string().contains("expected [Scope.]Field=Value"),
            "{err}"
        );
        let err = PeerRules::parse("subjectAltName=fdb.example.com").unwrap_err();
        assert!(err.to_string().contains("TYPE:value"), "{err}");
        let err = PeerRules::parse("subjectAltName=FOO:x").unwrap_err();
        assert!(
            err.to_string().contains("unknown subjectAltName type"),
            "{err}"
        );
        assert!(PeerRules::parse("CN=a,,O=b").is_err());
        assert!(PeerRules::parse(r"CN=a\").is_err());
    }

    #[test]
    fn values_may_contain_equals_signs() {
        let rules = PeerRules::parse("CN=a=b").unwrap();
        assert_eq!(rules.alternatives[0][0].value, "a=b");
    }
}
