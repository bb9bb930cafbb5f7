//! Secrets an expert's servers are given never travel further: the values of the `${VAR}`
//! references in the servers' declared environment (and in their arguments, when named like
//! a key or token), taken from the environment
//! (not from a default written in `AEM.md`), are cut out of every tool result before it is
//! recorded on the log or shown to the model, and out of everything the expert delivers, in
//! every form [`crate::core::secrets`] knows (as written, base64, hex, percent-encoded), as
//! are well-known key shapes. A tool that prints its environment, or echoes a key it was
//! given, shows `[redacted: VAR]` instead.
//!
//! Variables the runtime sets itself (`IRON_…`, such as the scratch's path) are not secrets.
//! Values shorter than [`MIN_SECRET_CHARS`] are not either: replacing a short value (`UTC`,
//! `1`) everywhere would mangle ordinary text, and a secret that short is no secret.

use serde_json::Value;

use super::env::{EnvMap, references};
pub use crate::core::secrets::MIN_SECRET_CHARS;
use crate::core::secrets::{Secrets, is_secret_name};

/// The secrets to cut out.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Secrets,
}

impl Redactor {
    /// The secrets referenced in `declared` (a server's `env:` values) and, among the
    /// references in `args`, those whose names say they are keys or tokens (an argument is
    /// more often a path the model must see, `${ARCHIVE}`, than a secret, `--token=${TOKEN}`),
    /// as `env` gives them.
    pub fn from_declared<'a>(
        declared: impl IntoIterator<Item = &'a String>,
        args: impl IntoIterator<Item = &'a String>,
        env: &EnvMap,
    ) -> Redactor {
        let in_args = args
            .into_iter()
            .flat_map(|a| references(a))
            .filter(|r| is_secret_name(&r.var));
        let mut secrets = Secrets::new();
        for reference in declared
            .into_iter()
            .flat_map(|v| references(v))
            .chain(in_args)
        {
            if reference.var.starts_with("IRON_") {
                continue;
            }
            if let Some(value) = env.get(&reference.var) {
                secrets.add(&reference.var, value);
            }
        }
        Redactor { secrets }
    }

    /// The secrets, for what else must cut them (the log's emitter).
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// `text` with every secret replaced by `[redacted: VAR]`.
    pub fn text(&self, text: &str) -> String {
        self.secrets.text(text).0
    }

    /// `value` with every string in it (keys included) redacted.
    pub fn value(&self, value: Value) -> Value {
        self.secrets.value(value).0
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
        let r = Redactor::from_declared(&declared, &[], &env);
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

    #[test]
    fn an_argument_reference_is_a_secret_only_when_named_like_one() {
        let env: EnvMap = [
            ("GH_TOKEN".to_string(), "ghs-value-0123456789".to_string()),
            ("ARCHIVE".to_string(), "/srv/newsroom/archive".to_string()),
            ("IRON_SCRATCH".to_string(), "/state/scratch/x-1".to_string()),
        ]
        .into();
        let args = [
            "--token=${GH_TOKEN}".to_string(),
            "${ARCHIVE}".to_string(),
            "${IRON_SCRATCH}".to_string(),
        ];
        let r = Redactor::from_declared(&[], &args, &env);
        let text = r.text("ghs-value-0123456789 /srv/newsroom/archive /state/scratch/x-1");
        assert_eq!(
            text,
            "[redacted: GH_TOKEN] /srv/newsroom/archive /state/scratch/x-1"
        );
    }
}
