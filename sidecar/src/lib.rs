//! The FoundationDB sidecar agent.
