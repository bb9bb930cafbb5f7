//! Validating the portable `SKILL.md`: identity, description, instructions, memory.

use super::error::{AemError, Sink};
use super::frontmatter::Document;
use super::memory::{
    ACCESSES, MEMORY_MENU, READ_ONLY_KINDS, SCOPES, one_of, parse_access, parse_scope,
};
use super::model::{Access, FileRecord, Scope};
use super::portable::{DeploymentNames, scan};
use super::raw::{RawCapabilities, RawMemory, RawSkill};
use super::rules::name_rule;
use super::valid_name;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// A memory declaration before scopes are resolved.
#[derive(Debug, Clone)]
pub(crate) struct MemoryDecl {
    pub(crate) kind: String,
    pub(crate) scope: Scope,
    pub(crate) access: Access,
}

/// One expert folder after its files are validated on their own.
#[derive(Debug)]
pub(crate) struct SkillDraft {
    pub(crate) skill: Document,
    pub(crate) role: String,
    pub(crate) identity: String,
    pub(crate) description: String,
    pub(crate) memory: Vec<MemoryDecl>,
    pub(crate) caps: Option<(Document, RawCapabilities)>,
    pub(crate) flows: Vec<FileRecord>,
    pub(crate) tests: Vec<FileRecord>,
}

/// What [`validate_skill`] reads besides SKILL.md.
pub(crate) struct SkillInput {
    pub(crate) skill: Document,
    pub(crate) caps: Option<Document>,
    pub(crate) flows: Vec<FileRecord>,
    pub(crate) tests: Vec<FileRecord>,
}

/// Validates SKILL.md (and parses capabilities.md, which the resolver checks against the
/// mesh). Returns `None` when the role itself is unusable.
pub(crate) fn validate_skill(
    input: SkillInput,
    names: &DeploymentNames<'_>,
    sink: &mut Sink,
) -> Option<SkillDraft> {
    let SkillInput {
        skill,
        caps,
        flows,
        tests,
    } = input;
    let path: PathBuf = skill.path.clone();
    let caps = caps.and_then(|doc| match doc.parse::<RawCapabilities>() {
        Ok(raw) => Some((doc, raw)),
        Err(d) => {
            sink.items.push(*d);
            None
        }
    });
    let raw: RawSkill = match skill.parse() {
        Ok(raw) => raw,
        Err(d) => {
            sink.items.push(*d);
            return None;
        }
    };

    for f in scan(&skill.text, names) {
        let field = if f.line >= skill.body_first_line {
            "body"
        } else {
            "front matter"
        };
        sink.push(
            &path,
            Some(f.line),
            field,
            AemError::DeploymentData {
                what: f.what,
                text: f.text,
            },
            Some("no deployment data in SKILL.md; grants, hosts and paths belong in capabilities.md or AEM.md".to_string()),
        );
    }

    let text_field = |value: &Option<String>, key: &str, hint: &str, sink: &mut Sink| match value
        .as_deref()
        .map(str::trim)
    {
        Some(v) if !v.is_empty() => v.to_string(),
        _ => {
            sink.push(
                &path,
                skill.line_at(&[key]).or(Some(1)),
                key,
                AemError::Empty,
                Some(hint.to_string()),
            );
            String::new()
        }
    };
    let identity = text_field(
        &raw.identity,
        "identity",
        "who this expert is, in a sentence",
        sink,
    );
    let description = text_field(
        &raw.description,
        "description",
        "what this expert does, for routing",
        sink,
    );
    if skill.body.is_empty() {
        sink.push(
            &path,
            Some(skill.body_first_line),
            "instructions",
            AemError::Empty,
            Some("the expert's instructions as prose after the front matter".to_string()),
        );
    }

    let memory = memory_of(&raw.memory, &skill, sink);

    let role = match raw.name.as_deref() {
        Some(n) if valid_name(n) => n.to_string(),
        other => {
            sink.push(
                &path,
                skill.line_at(&["name"]).or(Some(1)),
                "name",
                match other {
                    None => AemError::Empty,
                    Some(v) => AemError::InvalidName {
                        what: "role",
                        value: v.to_string(),
                    },
                },
                Some(format!("the role, {}", name_rule())),
            );
            return None;
        }
    };
    Some(SkillDraft {
        skill,
        role,
        identity,
        description,
        memory,
        caps,
        flows,
        tests,
    })
}

/// The memory declarations of a skill, each checked against the menu: the kind on it and
/// implemented, a known scope and access, read-only kinds only read, no kind and scope twice.
fn memory_of(declared: &[RawMemory], skill: &Document, sink: &mut Sink) -> Vec<MemoryDecl> {
    let path = &skill.path;
    let mut memory = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, m) in declared.iter().enumerate() {
        let field = format!("memory[{i}]");
        let mut ok = true;
        if !MEMORY_MENU.contains(&m.kind.as_str()) {
            ok = false;
            sink.push(
                path,
                skill.line_at(&["memory", &i.to_string(), "kind"]),
                format!("{field}.kind"),
                AemError::UnknownMemoryKind(m.kind.clone()),
                Some(one_of(MEMORY_MENU)),
            );
        }
        let scope = parse_scope(&m.scope);
        if scope.is_none() {
            sink.push(
                path,
                skill.line_at(&["memory", &i.to_string(), "scope"]),
                format!("{field}.scope"),
                AemError::UnknownScope(m.scope.clone()),
                Some(one_of(SCOPES)),
            );
        }
        let access = parse_access(&m.access);
        if access.is_none() {
            sink.push(
                path,
                skill.line_at(&["memory", &i.to_string(), "access"]),
                format!("{field}.access"),
                AemError::UnknownAccess(m.access.clone()),
                Some(one_of(ACCESSES)),
            );
        }
        let (Some(scope), Some(access)) = (scope, access) else {
            continue;
        };
        if ok && READ_ONLY_KINDS.contains(&m.kind.as_str()) && access != Access::Read {
            ok = false;
            sink.push(
                path,
                skill.line_at(&["memory", &i.to_string(), "access"]),
                format!("{field}.access"),
                AemError::AccessNotAllowed {
                    kind: m.kind.clone(),
                    access: m.access.clone(),
                },
                Some("`read`: this kind is derived in the background or declared, never written by the expert".to_string()),
            );
        }
        if !seen.insert((m.kind.clone(), scope)) {
            ok = false;
            sink.push(
                path,
                skill.line_at(&["memory", &i.to_string(), "kind"]),
                field.clone(),
                AemError::DuplicateMemory {
                    kind: m.kind.clone(),
                    scope: m.scope.clone(),
                },
                Some("one declaration per kind and scope".to_string()),
            );
        }
        if ok {
            memory.push(MemoryDecl {
                kind: m.kind.clone(),
                scope,
                access,
            });
        }
    }
    memory
}
