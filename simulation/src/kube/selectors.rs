//! Label selectors (equality and set based) and field selectors.

use std::collections::BTreeSet;

use serde_json::Value;

use super::errors::ApiError;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelRequirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed label selector; all requirements must hold. The empty selector matches all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

impl LabelSelector {
    /// Parses `a=b,c==d,e!=f,g in (x,y),h notin (z),i,!j`.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let requirements = split_top_level(text)
            .into_iter()
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| parse_requirement(part).ok_or_else(|| invalid_selector(text, part)))
            .collect::<Result<_, _>>()?;
        Ok(Self { requirements })
    }

    /// Whether an object's `metadata.labels` satisfy the selector.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.requirements
            .iter()
            .all(|requirement| match requirement {
                LabelRequirement::Equals(key, value) => label(key) == Some(value.as_str()),
                LabelRequirement::NotEquals(key, value) => label(key) != Some(value.as_str()),
                LabelRequirement::In(key, values) => label(key).is_some_and(|v| values.contains(v)),
                LabelRequirement::NotIn(key, values) => {
                    !label(key).is_some_and(|v| values.contains(v))
                }
                LabelRequirement::Exists(key) => label(key).is_some(),
                LabelRequirement::DoesNotExist(key) => label(key).is_none(),
            })
    }
}

fn invalid_selector(selector: &str, part: &str) -> ApiError {
    ApiError::bad_request(format!(
        "unable to parse requirement \"{part}\" of selector \"{selector}\""
    ))
}

/// Splits at commas that are not inside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (index, character) in text.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Option<LabelRequirement> {
    if let Some(key) = part.strip_prefix('!') {
        return valid_key(key.trim()).map(LabelRequirement::DoesNotExist);
    }
    if let Some((key, value)) = part.split_once("!=") {
        return Some(LabelRequirement::NotEquals(
            valid_key(key.trim())?,
            valid_value(value)?,
        ));
    }
    if let Some((key, value)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Some(LabelRequirement::Equals(
            valid_key(key.trim())?,
            valid_value(value)?,
        ));
    }
    if let Some(open) = part.find('(') {
        let close = part.rfind(')')?;
        if close != part.len() - 1 || close < open {
            return None;
        }
        let head: Vec<&str> = part[..open].split_whitespace().collect();
        let values = part[open + 1..close]
            .split(',')
            .map(valid_value)
            .collect::<Option<BTreeSet<_>>>()?;
        return match head.as_slice() {
            [key, "in"] => Some(LabelRequirement::In(valid_key(key)?, values)),
            [key, "notin"] => Some(LabelRequirement::NotIn(valid_key(key)?, values)),
            _ => None,
        };
    }
    valid_key(part.trim()).map(LabelRequirement::Exists)
}

fn valid_key(key: &str) -> Option<String> {
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    ok.then(|| key.to_string())
}

fn valid_value(value: &str) -> Option<String> {
    let value = value.trim();
    let ok = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    ok.then(|| value.to_string())
}

/// A parsed field selector: `path=value`, `path==value`, `path!=value`, comma separated.
///
/// Any dotted path into the object is accepted (`metadata.name`, `metadata.namespace`,
/// `spec.nodeName`, `status.phase`, ...); the real server restricts the set per kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses a field selector.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (path, equal, value) = if let Some((p, v)) = part.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (p, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector requirement \"{part}\" in \"{text}\""
                )));
            };
            requirements.push((path.trim().to_string(), equal, value.trim().to_string()));
        }
        Ok(Self { requirements })
    }

    /// Whether the object's fields satisfy the selector. Missing fields read as "".
    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|(path, equal, value)| {
            let pointer = format!("/{}", path.replace('.', "/"));
            let actual = match object.pointer(&pointer) {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == *value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labelled(labels: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn equality_and_set_based_label_selectors() {
        let object = labelled(json!({"app": "fdb", "class": "storage"}));
        let matches = |s: &str| LabelSelector::parse(s).unwrap().matches(&object);
        assert!(matches(""));
        assert!(matches("app=fdb"));
        assert!(matches("app==fdb,class=storage"));
        assert!(!matches("app!=fdb"));
        assert!(matches("class in (log, storage)"));
        assert!(!matches("class in (log,stateless)"));
        assert!(matches("class notin (log)"));
        assert!(matches("missing notin (log)"));
        assert!(matches("app,!missing"));
        assert!(!matches("!app"));
        assert!(!matches("missing"));
        assert!(matches("app=fdb,class in (storage,log),!zone"));
    }

    #[test]
    fn malformed_label_selectors_are_bad_requests() {
        assert_eq!(LabelSelector::parse("app in (a,b").unwrap_err().code, 400);
        assert_eq!(LabelSelector::parse("a b").unwrap_err().code, 400);
        assert_eq!(LabelSelector::parse("x=y z").unwrap_err().code, 400);
    }

    #[test]
    fn field_selectors_on_name_namespace_and_nested_fields() {
        let object =
            json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}});
        let matches = |s: &str| FieldSelector::parse(s).unwrap().matches(&object);
        assert!(matches("metadata.name=p"));
        assert!(matches("metadata.namespace==ns,metadata.name!=q"));
        assert!(!matches("metadata.name=q"));
        assert!(matches("spec.nodeName=n1"));
        assert!(matches("status.phase="));
        assert_eq!(FieldSelector::parse("nonsense").unwrap_err().code, 400);
    }
}
