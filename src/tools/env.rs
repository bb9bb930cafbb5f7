//! `${VAR}` and `${VAR:-default}`: the only way a server descriptor names a value from the
//! environment. References are expanded from an environment the caller passes in (never
//! read from a process-wide global here), when a server starts.
//!
//! Written here rather than taken from `shellexpand`: that crate also expands a bare `$VAR`
//! and a leading `~`, which in a server's arguments must stay literal (`cost $5`, a `~` the
//! server itself resolves), and the compiler and the secret redactor need the parsed
//! [`Reference`] (variable and default), not only the expanded text.

use std::collections::BTreeMap;
use thiserror::Error;

/// An environment to expand references from: variable name → value.
pub type EnvMap = BTreeMap<String, String>;

/// The parent process's environment, captured once (for callers that want it).
pub fn process_env() -> EnvMap {
    std::env::vars().collect()
}

/// Why a value could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EnvError {
    /// `${VAR}` names a variable that is not set and has no default. Set it, or write
    /// `${VAR:-default}`.
    #[error(
        "environment variable `{0}` is not set and has no default (write `${{{0}:-default}}` or set it)"
    )]
    Missing(String),
    /// `${` without a closing `}`, or a name that is not `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("malformed reference `{0}` (expected `${{VAR}}` or `${{VAR:-default}}`)")]
    Malformed(String),
}

/// One reference: the variable and its default, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// Variable name.
    pub var: String,
    /// Value used when the variable is unset or empty.
    pub default: Option<String>,
}

impl Reference {
    /// The reference as written: `${VAR}` or `${VAR:-default}`.
    pub fn render(&self) -> String {
        match &self.default {
            Some(d) => format!("${{{}:-{d}}}", self.var),
            None => format!("${{{}}}", self.var),
        }
    }
}

fn valid_var(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses the inside of `${…}`.
fn parse_inner(inner: &str) -> Option<Reference> {
    let (var, default) = match inner.split_once(":-") {
        Some((v, d)) => (v, Some(d.to_string())),
        None => (inner, None),
    };
    valid_var(var).then(|| Reference {
        var: var.to_string(),
        default,
    })
}

/// The reference `value` is, when the whole value is exactly one `${VAR}` or
/// `${VAR:-default}`.
pub fn as_reference(value: &str) -> Option<Reference> {
    let inner = value.strip_prefix("${")?.strip_suffix('}')?;
    if inner.contains(['{', '}', '$']) {
        return None;
    }
    parse_inner(inner)
}

/// Every well-formed `${VAR}` / `${VAR:-default}` in `value`, in order.
pub fn references(value: &str) -> Vec<Reference> {
    let mut found = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        found.extend(parse_inner(&after[..end]));
        rest = &after[end + 1..];
    }
    found
}

/// Expands every `${VAR}` / `${VAR:-default}` in `value` from `env`. `:-` uses the default
/// when the variable is unset or empty, as a shell does. A `$` not followed by `{` is kept.
pub fn expand(value: &str, env: &EnvMap) -> Result<String, EnvError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(EnvError::Malformed(rest[start..].to_string()));
        };
        let inner = &after[..end];
        let reference =
            parse_inner(inner).ok_or_else(|| EnvError::Malformed(format!("${{{inner}}}")))?;
        let value = env.get(&reference.var).filter(|v| !v.is_empty());
        match (value, &reference.default) {
            (Some(v), _) => out.push_str(v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(EnvError::Missing(reference.var)),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> EnvMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn expands_references_and_defaults() {
        let e = env(&[("ROOT", "/srv"), ("EMPTY", "")]);
        assert_eq!(expand("${ROOT}", &e).unwrap(), "/srv");
        assert_eq!(expand("--root=${ROOT}/x", &e).unwrap(), "--root=/srv/x");
        assert_eq!(expand("${NOPE:-.}", &e).unwrap(), ".");
        assert_eq!(expand("${EMPTY:-d}", &e).unwrap(), "d");
        assert_eq!(expand("${NOPE:-}", &e).unwrap(), "");
        assert_eq!(expand("cost $5", &e).unwrap(), "cost $5");
        assert_eq!(expand("${NOPE}", &e), Err(EnvError::Missing("NOPE".into())));
        assert!(matches!(expand("${ROOT", &e), Err(EnvError::Malformed(_))));
        assert!(matches!(expand("${1X}", &e), Err(EnvError::Malformed(_))));
    }

    #[test]
    fn whole_value_references() {
        assert_eq!(
            as_reference("${TZ:-UTC}"),
            Some(Reference {
                var: "TZ".into(),
                default: Some("UTC".into())
            })
        );
        assert_eq!(as_reference("${TZ:-UTC}").unwrap().render(), "${TZ:-UTC}");
        assert_eq!(as_reference("x${TZ}"), None);
        assert_eq!(as_reference("${A}${B}"), None);
        assert_eq!(as_reference("plain"), None);
    }
}
