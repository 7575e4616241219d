//! The characters of generated names (`generateName` suffixes, the service account
//! token volume's suffix), as the API server draws them (`utilrand.String` in
//! k8s.io/apimachinery `pkg/util/rand`).

/// Kubernetes' alphabet for generated name suffixes (no vowels, no confusable digits).
pub const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
