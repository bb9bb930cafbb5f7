//! The memory menu, what of it the runtime provides, and how a declaration becomes
//! namespace prefixes on the one store.

use super::model::{Access, Scope};

/// Every memory kind the format knows; the runtime provides each (working and episodic by
/// capture, semantic and procedural by the memory workers, identity from `SKILL.md`). A kind
/// added here without what provides it would ship as silent no-memory: add both together.
pub const MEMORY_MENU: &[&str] = &["working", "episodic", "semantic", "procedural", "identity"];

/// Kinds that are derived in the background or declared in SKILL.md, and so can only be
/// mounted for reading.
pub const READ_ONLY_KINDS: &[&str] = &["semantic", "procedural", "identity"];

/// Scope words.
pub const SCOPES: &[&str] = &["own", "mesh", "system"];

/// Access words.
pub const ACCESSES: &[&str] = &["read", "write", "read-write"];

/// Parses a scope word.
pub fn parse_scope(word: &str) -> Option<Scope> {
    match word {
        "own" => Some(Scope::Own),
        "mesh" => Some(Scope::Mesh),
        "system" => Some(Scope::System),
        _ => None,
    }
}

/// Parses an access word.
pub fn parse_access(word: &str) -> Option<Access> {
    match word {
        "read" => Some(Access::Read),
        "write" => Some(Access::Write),
        "read-write" => Some(Access::ReadWrite),
        _ => None,
    }
}

/// The namespace prefixes a scope reaches for the expert `mesh/role`:
/// own → `facts/<mesh>/<role>` + `facts/system`; mesh → `facts/<mesh>` + `facts/system`;
/// system → `facts`.
pub fn namespaces(scope: Scope, mesh: &str, role: &str) -> Vec<String> {
    match scope {
        Scope::Own => vec![format!("facts/{mesh}/{role}"), "facts/system".to_string()],
        Scope::Mesh => vec![format!("facts/{mesh}"), "facts/system".to_string()],
        Scope::System => vec!["facts".to_string()],
    }
}

/// `a, b, c` for an "expected one of" hint.
pub(crate) fn one_of(words: &[&str]) -> String {
    format!("one of: {}", words.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_resolve_to_prefixes() {
        assert_eq!(
            namespaces(Scope::Own, "newsroom", "analyst"),
            ["facts/newsroom/analyst", "facts/system"]
        );
        assert_eq!(
            namespaces(Scope::Mesh, "newsroom", "analyst"),
            ["facts/newsroom", "facts/system"]
        );
        assert_eq!(namespaces(Scope::System, "newsroom", "analyst"), ["facts"]);
    }
}
