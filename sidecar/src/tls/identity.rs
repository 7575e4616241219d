//! Extracting the [`PeerIdentity`] (subject, issuer, root names and alternative names)
//! of a client certificate chain with x509-parser.

use std::net::{Ipv4Addr, Ipv6Addr};

use rustls_pki_types::CertificateDer;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::oid_registry::{
    OID_DOMAIN_COMPONENT, OID_USERID, OID_X509_COMMON_NAME, OID_X509_COUNTRY_NAME,
    OID_X509_LOCALITY_NAME, OID_X509_ORGANIZATION_NAME, OID_X509_ORGANIZATIONAL_UNIT,
    OID_X509_STATE_OR_PROVINCE_NAME,
};
use x509_parser::prelude::{FromDer, X509Certificate, X509Name};

use super::rules::{DnField, PeerIdentity, SanType};

fn dn_entries(name: &X509Name<'_>) -> Vec<(DnField, String)> {
    name.iter_attributes()
        .filter_map(|attr| {
            let oid = attr.attr_type();
            let field = if *oid == OID_X509_COMMON_NAME {
                DnField::CommonName
            } else if *oid == OID_X509_COUNTRY_NAME {
                DnField::Country
            } else if *oid == OID_X509_LOCALITY_NAME {
                DnField::Locality
            } else if *oid == OID_X509_STATE_OR_PROVINCE_NAME {
                DnField::State
            } else if *oid == OID_X509_ORGANIZATION_NAME {
                DnField::Organization
            } else if *oid == OID_X509_ORGANIZATIONAL_UNIT {
                DnField::OrganizationalUnit
            } else if *oid == OID_USERID {
                DnField::UserId
            } else if *oid == OID_DOMAIN_COMPONENT {
                DnField::DomainComponent
            } else {
                return None;
            };
            attr.as_str().ok().map(|value| (field, value.to_owned()))
        })
        .collect()
}

fn general_names(names: &[GeneralName<'_>]) -> Vec<(SanType, String)> {
    names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(dns) => Some((SanType::Dns, (*dns).to_owned())),
            GeneralName::RFC822Name(email) => Some((SanType::Email, (*email).to_owned())),
            GeneralName::URI(uri) => Some((SanType::Uri, (*uri).to_owned())),
            GeneralName::IPAddress(bytes) => match bytes.len() {
                4 => <[u8; 4]>::try_from(*bytes)
                    .ok()
                    .map(|b| (SanType::Ip, Ipv4Addr::from(b).to_string())),
                16 => <[u8; 16]>::try_from(*bytes)
                    .ok()
                    .map(|b| (SanType::Ip, Ipv6Addr::from(b).to_string())),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn alt_names(cert: &X509Certificate<'_>, issuer: bool) -> Vec<(SanType, String)> {
    cert.iter_extensions()
        .filter_map(|ext| match (ext.parsed_extension(), issuer) {
            (ParsedExtension::SubjectAlternativeName(san), false) => {
                Some(general_names(&san.general_names))
            }
            (ParsedExtension::IssuerAlternativeName(ian), true) => {
                Some(general_names(&ian.general_names))
            }
            _ => None,
        })
        .flatten()
        .collect()
}

/// Why a chain could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse certificate: {0}")]
pub struct IdentityError(String);

fn parse(der: &[u8]) -> Result<X509Certificate<'_>, IdentityError> {
    X509Certificate::from_der(der)
        .map(|(_, cert)| cert)
        .map_err(|e| IdentityError(e.to_string()))
}

/// Builds the identity of a client whose chain was verified to end at the trust anchor
/// `root` (the CA-file certificate that webpki used as the anchor of the verified path).
///
/// The root must come from the verified path, never be looked up again by name: a
/// client could otherwise present a certificate that merely *names* another root.
pub fn peer_identity(
    leaf: &CertificateDer<'_>,
    root: &CertificateDer<'_>,
) -> Result<PeerIdentity, IdentityError> {
    let leaf_cert = parse(leaf)?;
    let root = parse(root)?;
    Ok(PeerIdentity {
        subject: dn_entries(leaf_cert.subject()),
        issuer: dn_entries(leaf_cert.issuer()),
        root: dn_entries(root.subject()),
        subject_alt_names: alt_names(&leaf_cert, false),
        issuer_alt_names: alt_names(&leaf_cert, true),
        root_alt_names: alt_names(&root, false),
    })
}

/// A one-line description of a certificate's subject, for logs.
pub fn describe_subject(der: &CertificateDer<'_>) -> String {
    parse(der)
        .map(|c| c.subject().to_string())
        .unwrap_or_else(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType as RcSan};

    #[test]
    fn identity_of_a_chain_with_an_intermediate() {
        let root_key = KeyPair::generate().unwrap();
        let mut root_params = CertificateParams::new(vec!["root.example".into()]).unwrap();
        root_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        root_params
            .distinguished_name
            .push(DnType::CommonName, "Root CA");
        root_params
            .distinguished_name
            .push(DnType::CountryName, "US");
        let root = root_params.self_signed(&root_key).unwrap();
        let root_issuer = rcgen::Issuer::new(root_params, root_key);

        let mid_key = KeyPair::generate().unwrap();
        let mut mid_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        mid_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        mid_params
            .distinguished_name
            .push(DnType::CommonName, "Intermediate CA");
        mid_params.signed_by(&mid_key, &root_issuer).unwrap();
        let mid_issuer = rcgen::Issuer::new(mid_params, mid_key);

        let leaf_key = KeyPair::generate().unwrap();
        let mut leaf_params = CertificateParams::new(vec!["operator.fdb.svc".into()]).unwrap();
        leaf_params
            .subject_alt_names
            .push(RcSan::IpAddress("10.1.2.3".parse().unwrap()));
        leaf_params
            .distinguished_name
            .push(DnType::CommonName, "fdb-operator");
        leaf_params
            .distinguished_name
            .push(DnType::OrganizationalUnitName, "db");
        let leaf = leaf_params.signed_by(&leaf_key, &mid_issuer).unwrap();

        let identity = peer_identity(leaf.der(), root.der()).unwrap();
        assert!(
            identity
                .subject
                .contains(&(DnField::CommonName, "fdb-operator".into()))
        );
        assert!(
            identity
                .subject
                .contains(&(DnField::OrganizationalUnit, "db".into()))
        );
        assert_eq!(
            identity.issuer,
            vec![(DnField::CommonName, "Intermediate CA".into())]
        );
        assert!(
            identity
                .root
                .contains(&(DnField::CommonName, "Root CA".into()))
        );
        assert!(identity.root.contains(&(DnField::Country, "US".into())));
        assert!(
            identity
                .subject_alt_names
                .contains(&(SanType::Dns, "operator.fdb.svc".into()))
        );
        assert!(
            identity
                .subject_alt_names
                .contains(&(SanType::Ip, "10.1.2.3".into()))
        );
        assert_eq!(
            identity.root_alt_names,
            vec![(SanType::Dns, "root.example".into())]
        );
    }

    #[test]
    fn garbage_is_an_error() {
        let garbage = CertificateDer::from(vec![1, 2, 3]);
        assert!(peer_identity(&garbage, &garbage).is_err());
    }
}
