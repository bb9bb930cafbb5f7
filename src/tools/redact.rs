//! Secrets an expert's servers are given never travel further: the values of the `${VAR}`
//! references in the servers' declared environment, taken from the environment (not from a
//! default written in `AEM.md`), are cut out of every tool result before it is recorded on
//! the log or shown to the model, and out of everything the expert delivers. A tool that
//! prints its environment, or echoes a key it was given, shows `[redacted: VAR]` instead.
//!
//! Values shorter than [`MIN_SECRET_CHARS`] are not treated as secrets: replacing a short
//! value (`UTC`, `1`) everywhere would mangle ordinary text, and a secret that short is no
//! secret.

use serde_json::Value;

use super::env::{EnvMap, as_reference};

/// Shortest value treated as a secret.
pub const MIN_SECRET_CHARS: usize = 8;

/// The secrets to cut out, longest first (so a secret containing another is cut whole).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<(String, String)>,
}

impl Redactor {
    /// The secrets of `declared` (a server's `env:` block: name → `${VAR}` reference) as
    /// `env` gives them.
    pub fn from_declared<'a>(
        declared: impl IntoIterator<Item = &'a String>,
        env: &EnvMap,
    ) -> Redactor {
        let mut secrets: Vec<(String, String)> = declared
            .into_iter()
            .filter_map(|value| {
                let var = as_reference(value)?.var;
                let secret = env.get(&var)?;
                (secret.chars().count() >= MIN_SECRET_CHARS).then(|| (var, secret.clone()))
            })
            .collect();
        secrets.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` with every secret replaced by `[redacted: VAR]`.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (var, secret) in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), &format!("[redacted: {var}]"));
            }
        }
        out
    }

    /// `value` with every string in it (keys included) redacted.
    pub fn value(&self, value: Value) -> Value {
        if self.secrets.is_empty() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.text(&k), self.value(v)))
                    .collect(),
            ),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn referenced_values_from_the_environment_are_cut_out() {
        let env: EnvMap = [
            ("API_KEY".to_string(), "sk-live-0123456789".to_string()),
            ("TZ".to_string(), "UTC".to_string()),
            ("ROOT".to_string(), "/srv/newsroom/archive".to_string()),
        ]
        .into();
        let declared = [
            "${API_KEY}".to_string(),
            "${TZ:-UTC}".to_string(),
            "${UNSET:-a-long-default-value}".to_string(),
            "${ROOT}".to_string(),
        ];
        let r = Redactor::from_declared(&declared, &env);
        let out = r.value(json!({
            "env": {"API_KEY": "sk-live-0123456789", "TZ": "UTC"},
            "log": ["wrote /srv/newsroom/archive/x", "a-long-default-value"],
            "sk-live-0123456789": 1
        }));
        let text = out.to_string();
        assert!(!text.contains("sk-live-0123456789"), "{text}");
        assert!(text.contains("[redacted: API_KEY]"), "{text}");
        assert!(text.contains("[redacted: ROOT]/x"), "{text}");
        assert!(
            text.contains("\"UTC\""),
            "short values are left alone: {text}"
        );
        assert!(
            text.contains("a-long-default-value"),
            "defaults are not secrets: {text}"
        );
    }
}
