//! Serde helpers shared by the API types.

/// Whether a value equals its type's default; used to leave unset groups of settings out
/// of the serialized object.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}
