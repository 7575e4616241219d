//! HTTP/1 serving with bounded connections: a connection cap, a header timeout and, while
//! every slot is taken, the longest-idle connection closed for a newcomer. Shared by the
//! sidecar's API and the HTTP endpoints of `fdb-operator run`, so the operator library
//! does not depend on the sidecar.

pub mod connections;
pub mod limited;
