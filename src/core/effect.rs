//! What a tool does to the world, and how much an expert is trusted to do.
//!
//! These are the pure rules behind gate 1 (clearance). The catalog compiler applies them
//! when it grants tools; the tools layer applies the same functions when it admits a call.
//!
//! * A tool's **effect** is derived from the verbs in its name. The name is split on `_`,
//!   `-`, `.`, `/`, whitespace and camelCase boundaries; each word is compared, whole, to
//!   three verb tables (simple inflections such as `deletes`, `deleted`, `deleting` count
//!   as the verb). The strongest verb found wins. A name with no recognised verb is
//!   [`Effect::Destructive`]: what we cannot read, we do not trust.
//! * A server's own **annotation** may raise the effect, never lower it: a server is an
//!   untrusted process.
//! * A **human declaration** (reviewed in `capabilities.md`) may lower it, within
//!   [the cap](lower_within_cap): one level at most, and never for irreversible verbs.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What calling a tool can do, from weakest to strongest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Effect {
    /// Observes the world without changing it.
    Read,
    /// Changes the world in a way that can be seen and undone.
    Write,
    /// May change the world beyond repair, or run arbitrary code.
    Destructive,
}

/// How much an expert is trusted with, from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clearance {
    /// May hold tools whose effect is [`Effect::Read`].
    Read,
    /// May also hold tools whose effect is [`Effect::Write`].
    ReadWrite,
    /// May hold any tool, destructive ones included.
    Full,
}

impl Effect {
    /// Every effect, weakest first.
    pub const ALL: [Effect; 3] = [Effect::Read, Effect::Write, Effect::Destructive];

    /// The word used in declarations and in `catalog.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Destructive => "destructive",
        }
    }

    /// Parses a declaration word (`read`, `write`, `destructive`); `None` for anything else.
    pub fn from_word(word: &str) -> Option<Effect> {
        Effect::ALL.into_iter().find(|e| e.as_str() == word)
    }

    /// The lowest clearance allowed to hold a tool with this effect.
    pub fn required_clearance(self) -> Clearance {
        match self {
            Effect::Read => Clearance::Read,
            Effect::Write => Clearance::ReadWrite,
            Effect::Destructive => Clearance::Full,
        }
    }

    /// How many levels this effect sits above `other` (0 when it is not above).
    pub fn levels_above(self, other: Effect) -> u8 {
        (self as u8).saturating_sub(other as u8)
    }

    /// The effect implied by the MCP tool hints `readOnlyHint` / `destructiveHint`, if
    /// they say anything. MCP's defaults apply: a tool that is not read-only is
    /// destructive unless it says otherwise.
    pub fn from_mcp_hints(read_only: Option<bool>, destructive: Option<bool>) -> Option<Effect> {
        match (read_only, destructive) {
            (Some(true), _) => Some(Effect::Read),
            (Some(false), Some(false)) => Some(Effect::Write),
            (Some(false), _) => Some(Effect::Destructive),
            (None, Some(true)) => Some(Effect::Destructive),
            (None, Some(false)) => Some(Effect::Write),
            (None, None) => None,
        }
    }
}

impl Clearance {
    /// Every clearance, least trusted first.
    pub const ALL: [Clearance; 3] = [Clearance::Read, Clearance::ReadWrite, Clearance::Full];

    /// The word used in declarations and in `catalog.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Clearance::Read => "read",
            Clearance::ReadWrite => "read-write",
            Clearance::Full => "full",
        }
    }

    /// Parses a clearance word (`read`, `read-write`, `full`); `None` for anything else.
    pub fn from_word(word: &str) -> Option<Clearance> {
        Clearance::ALL.into_iter().find(|c| c.as_str() == word)
    }

    /// Whether an expert with this clearance may hold a tool with `effect`.
    pub fn permits(self, effect: Effect) -> bool {
        effect.required_clearance() <= self
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Clearance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Verbs that only observe.
pub const READ_VERBS: &[&str] = &[
    "browse", "count", "describe", "diff", "fetch", "find", "get", "inspect", "list", "lookup",
    "peek", "preview", "read", "search", "show", "stat", "status", "view",
];

/// Verbs that change something visibly and reversibly.
pub const WRITE_VERBS: &[&str] = &[
    "add", "append", "apply", "assign", "checkout", "comment", "commit", "copy", "create",
    "download", "edit", "import", "init", "insert", "label", "merge", "mkdir", "modify", "move",
    "notify", "patch", "post", "publish", "push", "put", "rename", "replace", "reply", "save",
    "schedule", "send", "set", "store", "submit", "tag", "update", "upload", "upsert", "write",
];

/// Verbs that may destroy, or that run arbitrary code (`query` is here: a query can drop a table).
pub const DESTRUCTIVE_VERBS: &[&str] = &[
    "delete",
    "destroy",
    "drop",
    "erase",
    "eval",
    "exec",
    "execute",
    "install",
    "kill",
    "purge",
    "query",
    "remove",
    "reset",
    "revert",
    "rm",
    "rmdir",
    "run",
    "shell",
    "spawn",
    "sql",
    "sudo",
    "terminate",
    "truncate",
    "uninstall",
    "wipe",
];

/// Destructive verbs whose effect no declaration may lower: what they do cannot be undone,
/// however the tool is confined. (`run`, `exec`, `shell` and `query` are not here: a
/// confined runner is the reason lowering exists.)
pub const IRREVERSIBLE_VERBS: &[&str] = &[
    "delete",
    "destroy",
    "drop",
    "erase",
    "purge",
    "remove",
    "rm",
    "rmdir",
    "truncate",
    "uninstall",
    "wipe",
];

/// The effect of a tool name and the verb that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// The effect derived from the name alone.
    pub effect: Effect,
    /// The verb (table form, e.g. `delete` for `deleting`) that decided it; `None` when no
    /// verb was recognised and the fail-closed default applied.
    pub verb: Option<&'static str>,
}

/// Splits a tool name into lower-case words on `_ - . /`, whitespace, camelCase and
/// letter/digit boundaries (`getHTTPStatus2` → `get`, `http`, `status`, `2`).
pub fn split_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in name.split(|c: char| matches!(c, '_' | '-' | '.' | '/') || c.is_whitespace()) {
        let chars: Vec<char> = chunk.chars().collect();
        let mut current = String::new();
        for (i, &c) in chars.iter().enumerate() {
            if i > 0 && !current.is_empty() {
                let prev = chars[i - 1];
                let next = chars.get(i + 1).copied();
                let lower_to_upper = prev.is_lowercase() && c.is_uppercase();
                let acronym_end = prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(|n| n.is_lowercase());
                let digit_edge = prev.is_ascii_digit() != c.is_ascii_digit();
                if lower_to_upper || acronym_end || digit_edge {
                    words.push(std::mem::take(&mut current));
                }
            }
            current.extend(c.to_lowercase());
        }
        if !current.is_empty() {
            words.push(current);
        }
    }
    words
}

/// The table verb a word stands for, allowing simple inflections
/// (`lists`, `pushes`, `deleted`, `dropped`, `running`, `deleting`).
fn verb_of(word: &str) -> Option<(&'static str, Effect)> {
    let mut candidates = vec![word.to_string()];
    for suffix in ["ing", "ed", "es", "s", "d"] {
        if let Some(stem) = word.strip_suffix(suffix).filter(|s| s.len() >= 2) {
            candidates.push(stem.to_string());
            if suffix == "ing" || suffix == "ed" {
                candidates.push(format!("{stem}e"));
                let mut chars = stem.chars().rev();
                if let (Some(a), Some(b)) = (chars.next(), chars.next())
                    && a == b
                {
                    candidates.push(stem[..stem.len() - a.len_utf8()].to_string());
                }
            }
        }
    }
    let tables = [
        (DESTRUCTIVE_VERBS, Effect::Destructive),
        (WRITE_VERBS, Effect::Write),
        (READ_VERBS, Effect::Read),
    ];
    for candidate in &candidates {
        for (table, effect) in tables {
            if let Some(verb) = table.iter().find(|v| **v == candidate.as_str()) {
                return Some((verb, effect));
            }
        }
    }
    None
}

/// Classifies a tool name: the strongest recognised verb wins; no verb → destructive.
pub fn classify_tool_name(name: &str) -> Classification {
    let mut best: Option<(&'static str, Effect)> = None;
    for word in split_words(name) {
        if let Some((verb, effect)) = verb_of(&word)
            && best.is_none_or(|(_, e)| effect > e)
        {
            best = Some((verb, effect));
        }
    }
    match best {
        Some((verb, effect)) => Classification {
            effect,
            verb: Some(verb),
        },
        None => Classification {
            effect: Effect::Destructive,
            verb: None,
        },
    }
}

/// Applies a server's annotation: it may raise the effect, never lower it.
pub fn raise_by_annotation(derived: Effect, annotation: Option<Effect>) -> Effect {
    annotation.map_or(derived, |a| a.max(derived))
}

/// The largest number of levels a human declaration may lower an effect.
pub const MAX_LOWERING_LEVELS: u8 = 1;

/// Why a human declaration was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoweringRefused {
    /// The declaration lowers by more than [`MAX_LOWERING_LEVELS`].
    TooFar {
        /// Effect before the declaration (name, then annotation).
        from: Effect,
        /// Effect the declaration asked for.
        to: Effect,
        /// The lowest effect the cap allows here.
        floor: Effect,
    },
    /// The name carries an irreversible verb; its effect cannot be lowered at all.
    Irreversible {
        /// The irreversible verb found in the name.
        verb: &'static str,
        /// Effect the declaration asked for.
        to: Effect,
    },
}

impl fmt::Display for LoweringRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoweringRefused::TooFar { from, to, floor } => write!(
                f,
                "declaring `{to}` lowers `{from}` by more than {MAX_LOWERING_LEVELS} level; the lowest allowed is `{floor}`"
            ),
            LoweringRefused::Irreversible { verb, to } => write!(
                f,
                "declaring `{to}` lowers a tool with the irreversible verb `{verb}`, which stays `destructive`"
            ),
        }
    }
}

/// Applies a human declaration to `current` (the effect after annotations) within the cap:
/// raising or keeping is always allowed; lowering is allowed by at most
/// [`MAX_LOWERING_LEVELS`], and never when the name holds an [`IRREVERSIBLE_VERBS`] word.
pub fn lower_within_cap(
    name: &str,
    current: Effect,
    declared: Effect,
) -> Result<Effect, LoweringRefused> {
    if declared >= current {
        return Ok(declared);
    }
    if let Some(verb) = irreversible_verb(name) {
        return Err(LoweringRefused::Irreversible { verb, to: declared });
    }
    if current.levels_above(declared) > MAX_LOWERING_LEVELS {
        let floor = Effect::ALL[(current as usize).saturating_sub(MAX_LOWERING_LEVELS as usize)];
        return Err(LoweringRefused::TooFar {
            from: current,
            to: declared,
            floor,
        });
    }
    Ok(declared)
}

/// The first irreversible verb in a tool name, if any.
pub fn irreversible_verb(name: &str) -> Option<&'static str> {
    split_words(name).iter().find_map(|w| {
        verb_of(w)
            .map(|(verb, _)| verb)
            .filter(|v| IRREVERSIBLE_VERBS.contains(v))
    })
}

/// The full derivation of one tool's effect, as recorded in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectResolution {
    /// From the name alone.
    pub derived: Classification,
    /// After the server's annotation (never below `derived.effect`).
    pub annotated: Effect,
    /// After the human declaration: the effect gate 1 enforces.
    pub effect: Effect,
}

/// Derives a tool's effect from its name, raises it by the server's annotation, then
/// applies a human declaration within the cap.
pub fn resolve_effect(
    name: &str,
    annotation: Option<Effect>,
    declared: Option<Effect>,
) -> Result<EffectResolution, LoweringRefused> {
    let derived = classify_tool_name(name);
    let annotated = raise_by_annotation(derived.effect, annotation);
    let effect = match declared {
        Some(d) => lower_within_cap(name, annotated, d)?,
        None => annotated,
    };
    Ok(EffectResolution {
        derived,
        annotated,
        effect,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verb_tables_do_not_overlap() {
        for v in READ_VERBS {
            assert!(
                !WRITE_VERBS.contains(v) && !DESTRUCTIVE_VERBS.contains(v),
                "{v}"
            );
        }
        for v in WRITE_VERBS {
            assert!(!DESTRUCTIVE_VERBS.contains(v), "{v}");
        }
        for v in IRREVERSIBLE_VERBS {
            assert!(DESTRUCTIVE_VERBS.contains(v), "{v}");
        }
    }

    #[test]
    fn clearance_order_matches_effects() {
        assert!(Clearance::Read.permits(Effect::Read));
        assert!(!Clearance::Read.permits(Effect::Write));
        assert!(Clearance::ReadWrite.permits(Effect::Write));
        assert!(!Clearance::ReadWrite.permits(Effect::Destructive));
        assert!(Clearance::Full.permits(Effect::Destructive));
    }
}
