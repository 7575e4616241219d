//! JSON merge patches (RFC 7386) of exactly the differences between two documents, so
//! that writes name only what changed and removed fields are removed.

use serde_json::{Map, Value};

/// The merge patch turning `live` into `desired`; `None` when they are equal.
pub(crate) fn merge_diff(live: &Value, desired: &Value) -> Option<Value> {
    if live == desired {
        return None;
    }
    match (live, desired) {
        (Value::Object(live), Value::Object(desired)) => {
            let mut patch = Map::new();
            for (key, value) in desired {
                match live.get(key) {
                    Some(old) => {
                        if let Some(diff) = merge_diff(old, value) {
                            patch.insert(key.clone(), diff);
                        }
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in live.keys() {
                if !desired.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        // Arrays and scalars are replaced whole; a null in `desired` would mean
        // "remove", so it never appears as a value here.
        _ => Some(desired.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_differences_and_removals() {
        let live = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "gone": true});
        let desired = json!({"a": 1, "b": {"c": 2, "d": 4}, "e": [1], "new": "x"});
        let patch = merge_diff(&live, &desired).unwrap();
        assert_eq!(
            patch,
            json!({"b": {"d": 4}, "e": [1], "new": "x", "gone": null})
        );
        let mut applied = live.clone();
        json_patch::merge(&mut applied, &patch);
        assert_eq!(applied, desired);
        assert_eq!(merge_diff(&desired, &desired), None);
    }
}
