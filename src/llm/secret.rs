//! API keys by reference: configuration holds `${VAR}`, the value is looked up at call time
//! and never shown by `Debug`, errors or logs.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// Where key references are resolved. The process environment in production
/// ([`ProcessEnv`]); a map in tests ([`MapEnv`]), so no test mutates the environment.
pub trait SecretSource: Send + Sync {
    /// The value of `variable`, if set and not empty.
    fn get(&self, variable: &str) -> Option<String>;
}

/// Reads the process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl SecretSource for ProcessEnv {
    fn get(&self, variable: &str) -> Option<String> {
        std::env::var(variable).ok().filter(|v| !v.is_empty())
    }
}

/// A fixed set of variables. Its `Debug` shows the names only.
#[derive(Clone, Default)]
pub struct MapEnv(BTreeMap<String, String>);

impl MapEnv {
    /// From `(variable, value)` pairs.
    pub fn new<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl fmt::Debug for MapEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl SecretSource for MapEnv {
    fn get(&self, variable: &str) -> Option<String> {
        self.0.get(variable).filter(|v| !v.is_empty()).cloned()
    }
}

/// A reference to a key: exactly `${VAR}`, where `VAR` is `[A-Za-z_][A-Za-z0-9_]*`. Anything
/// else (an inline key, a default) is refused when the configuration is read.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct KeyRef {
    variable: String,
}

/// Why a key reference was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "api_key must be a reference of the form ${{VAR}} (an environment variable name), not {shown}; put the key in the environment and reference it"
)]
pub struct InvalidKeyRef {
    /// What was written, masked when it could be a key.
    pub shown: String,
}

impl KeyRef {
    /// Parses `${VAR}`.
    pub fn parse(text: &str) -> Result<Self, InvalidKeyRef> {
        let inner = text
            .strip_prefix("${")
            .and_then(|rest| rest.strip_suffix('}'));
        match inner {
            Some(var) if valid_variable(var) => Ok(Self {
                variable: var.to_string(),
            }),
            _ => Err(InvalidKeyRef {
                // The text may be a pasted key: show its shape, never its value.
                shown: format!("a {}-character literal", text.chars().count()),
            }),
        }
    }

    /// The variable name.
    pub fn variable(&self) -> &str {
        &self.variable
    }

    /// Looks the key up now.
    pub fn resolve(&self, source: &dyn SecretSource) -> Option<Secret> {
        source.get(&self.variable).map(Secret)
    }
}

impl fmt::Debug for KeyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${{{}}}", self.variable)
    }
}

impl From<KeyRef> for String {
    fn from(k: KeyRef) -> String {
        format!("${{{}}}", k.variable)
    }
}

impl<'de> Deserialize<'de> for KeyRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        KeyRef::parse(&text).map_err(serde::de::Error::custom)
    }
}

fn valid_variable(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A resolved key. It has no `Display`; `Debug` prints `[redacted]`.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// The key, for building the request header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]` (servers sometimes
    /// echo the key in an error).
    pub(crate) fn scrub(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, "[redacted]")
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bare_variable_reference_is_accepted() {
        assert_eq!(
            KeyRef::parse("${OPENAI_API_KEY}").unwrap().variable(),
            "OPENAI_API_KEY"
        );
        for bad in [
            "sk-abc123",
            "${}",
            "${1X}",
            "${A-B}",
            "$A",
            "${A:-x}",
            "x${A}",
        ] {
            let err = KeyRef::parse(bad).unwrap_err();
            assert!(!err.to_string().contains(bad) || bad.len() < 3, "{err}");
        }
    }

    #[test]
    fn an_inline_key_is_not_echoed_by_the_error() {
        let err = KeyRef::parse("sk-live-0123456789abcdef").unwrap_err();
        assert!(!err.to_string().contains("0123456789abcdef"));
    }

    #[test]
    fn secrets_resolve_at_lookup_and_never_debug_print() {
        let env = MapEnv::new([("K", "s3cr3t-value")]);
        let key = KeyRef::parse("${K}").unwrap();
        let secret = key.resolve(&env).unwrap();
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert!(!format!("{env:?}").contains("s3cr3t"));
        assert_eq!(secret.scrub("bad key s3cr3t-value!"), "bad key [redacted]!");
        assert!(KeyRef::parse("${MISSING}").unwrap().resolve(&env).is_none());
    }
}
