//! Walking the `aem/` tree: which files exist, reading them, and driving validation and
//! resolution in a fixed order so that errors and output are deterministic.

use super::error::{AemError, Sink};
use super::expert::{Index, resolve_expert};
use super::frontmatter::Document;
use super::mesh::{MeshDraft, validate_mesh};
use super::model::{Catalog, FORMAT_VERSION, FileRecord};
use super::portable::DeploymentNames;
use super::sha256_hex;
use super::skill::{SkillDraft, SkillInput, validate_skill};
use super::triggers::validate_triggers;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const MESH_ENTRIES: &[&str] = &["AEM.md", "skills", "README.md"];
const SKILL_ENTRIES: &[&str] = &["SKILL.md", "capabilities.md", "flows", "tests"];

/// One entry of a directory: name, path, and whether it is a directory.
struct Entry {
    name: String,
    path: PathBuf,
    is_dir: bool,
}

/// The visible entries of `dir`, sorted by name. Symlinks, anything that is neither a file nor
/// a directory, and unreadable entries are reported; hidden entries (`.name`) are skipped.
fn entries(dir: &Path, sink: &mut Sink) -> Vec<Entry> {
    let read = match fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) => {
            sink.push(dir, None, "", e.into(), None);
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for item in read {
        let item = match item {
            Ok(i) => i,
            Err(e) => {
                sink.push(dir, None, "", e.into(), None);
                continue;
            }
        };
        let path = item.path();
        let name = item.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                sink.push(
                    &path,
                    None,
                    "",
                    AemError::Symlink,
                    Some("a regular file or directory".to_string()),
                );
            }
            // A named pipe, socket or device is never opened: reading a pipe blocks forever.
            Ok(m) if !m.is_dir() && !m.is_file() => {
                sink.push(
                    &path,
                    None,
                    "",
                    AemError::NotRegular,
                    Some("a regular file or directory".to_string()),
                );
            }
            Ok(m) => out.push(Entry {
                name,
                path,
                is_dir: m.is_dir(),
            }),
            Err(e) => sink.push(&path, None, "", e.into(), None),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn read_doc(path: &Path, sink: &mut Sink) -> Option<Document> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            sink.push(path, None, "", e.into(), None);
            return None;
        }
    };
    match Document::split(path, &text) {
        Ok(d) => Some(d),
        Err(d) => {
            sink.items.push(*d);
            None
        }
    }
}

/// Every regular file under `dir`, relative to `base`, sorted, with its hash.
fn records(base: &Path, dir: &Path, sink: &mut Sink) -> Vec<FileRecord> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in entries(&d, sink) {
            if e.is_dir {
                stack.push(e.path);
                continue;
            }
            match fs::read(&e.path) {
                Ok(bytes) => {
                    let rel = e.path.strip_prefix(base).unwrap_or(&e.path);
                    let path = rel
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/");
                    out.push(FileRecord {
                        path,
                        sha256: sha256_hex(&bytes),
                    });
                }
                Err(err) => sink.push(&e.path, None, "", err.into(), None),
            }
        }
    }
    out.sort();
    out
}

/// A mesh folder as loaded: its AEM.md (if valid enough) and its expert folders.
struct LoadedMesh {
    name: String,
    draft: Option<MeshDraft>,
    skills: Vec<SkillDraft>,
}

fn unexpected(e: &Entry, allowed: &[&str], sink: &mut Sink) {
    sink.push(
        &e.path,
        None,
        "",
        AemError::UnexpectedEntry(e.name.clone()),
        Some(format!("only {}", allowed.join(", "))),
    );
}

fn load_mesh(dir: &Path, name: &str, sink: &mut Sink) -> LoadedMesh {
    let list = entries(dir, sink);
    let mut has_aem = false;
    let mut skills_dir = None;
    for e in &list {
        match (e.name.as_str(), e.is_dir) {
            ("AEM.md", false) => has_aem = true,
            ("skills", true) => skills_dir = Some(e.path.clone()),
            ("README.md", false) => {}
            _ => unexpected(e, MESH_ENTRIES, sink),
        }
    }
    let aem_path = dir.join("AEM.md");
    let draft = if has_aem {
        read_doc(&aem_path, sink).and_then(|doc| validate_mesh(name, doc, sink))
    } else {
        sink.push(
            &aem_path,
            None,
            "",
            AemError::MissingFile,
            Some("every mesh folder to hold an AEM.md".to_string()),
        );
        None
    };

    let servers: BTreeSet<String> = draft
        .as_ref()
        .map(|d| d.entry.servers.keys().cloned().collect())
        .unwrap_or_default();
    let tools: BTreeSet<String> = draft
        .as_ref()
        .map(|d| {
            d.entry
                .servers
                .values()
                .flat_map(|s| s.tools.keys())
                .filter(|t| crate::core::effect::split_words(t).len() > 1)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let names = DeploymentNames {
        servers: &servers,
        tools: &tools,
    };

    let mut skills = Vec::new();
    if let Some(sd) = skills_dir {
        for e in entries(&sd, sink) {
            if !e.is_dir {
                unexpected(&e, &["one folder per expert"], sink);
                continue;
            }
            if let Some(s) = load_skill(&e.path, &names, sink) {
                skills.push(s);
            }
        }
    }
    LoadedMesh {
        name: name.to_string(),
        draft,
        skills,
    }
}

fn load_skill(dir: &Path, names: &DeploymentNames<'_>, sink: &mut Sink) -> Option<SkillDraft> {
    let mut has_skill = false;
    let mut has_caps = false;
    let mut flows = Vec::new();
    let mut tests = Vec::new();
    for e in entries(dir, sink) {
        match (e.name.as_str(), e.is_dir) {
            ("SKILL.md", false) => has_skill = true,
            ("capabilities.md", false) => has_caps = true,
            ("flows", true) => flows = records(dir, &e.path, sink),
            ("tests", true) => tests = records(dir, &e.path, sink),
            _ => unexpected(&e, SKILL_ENTRIES, sink),
        }
    }
    let skill_path = dir.join("SKILL.md");
    if !has_skill {
        sink.push(
            &skill_path,
            None,
            "",
            AemError::MissingFile,
            Some("every expert folder to hold a SKILL.md".to_string()),
        );
        return None;
    }
    let caps = if has_caps {
        read_doc(&dir.join("capabilities.md"), sink)
    } else {
        None
    };
    let skill = read_doc(&skill_path, sink)?;
    validate_skill(
        SkillInput {
            skill,
            caps,
            flows,
            tests,
        },
        names,
        sink,
    )
}

/// Compiles the tree at `aem_dir`; the catalog is returned only when `sink` stays empty.
pub(crate) fn compile_tree(aem_dir: &Path, sink: &mut Sink) -> Option<Catalog> {
    let mut meshes = Vec::new();
    for e in entries(aem_dir, sink) {
        if e.is_dir {
            meshes.push(load_mesh(&e.path, &e.name, sink));
        }
    }

    // Duplicate roles inside a mesh.
    for m in &mut meshes {
        let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
        m.skills.retain(|s| match seen.get(&s.role) {
            Some(first) => {
                sink.push(
                    &s.skill.path,
                    s.skill.line_at(&["name"]),
                    "name",
                    AemError::DuplicateRole {
                        role: s.role.clone(),
                        other: first.display().to_string(),
                    },
                    Some("a role name used by one expert folder only".to_string()),
                );
                false
            }
            None => {
                seen.insert(s.role.clone(), s.skill.path.clone());
                true
            }
        });
    }

    let index: Index = meshes
        .iter()
        .filter_map(|m| {
            let d = m.draft.as_ref()?;
            let roles = m.skills.iter().map(|s| s.role.clone()).collect();
            Some((m.name.clone(), (d.entry.status, roles)))
        })
        .collect();

    let mut catalog = Catalog {
        format_version: FORMAT_VERSION,
        meshes: BTreeMap::new(),
        experts: BTreeMap::new(),
    };
    for m in &meshes {
        let Some(draft) = &m.draft else { continue };
        let roles: BTreeSet<&str> = m.skills.iter().map(|s| s.role.as_str()).collect();
        for role in draft.models.keys() {
            if !roles.contains(role.as_str()) {
                sink.push(
                    &draft.doc.path,
                    draft.doc.line_at(&["defaults", "models", role]),
                    format!("defaults.models.{role}"),
                    AemError::UnknownRole(role.clone()),
                    Some(format!(
                        "a role of this mesh ({})",
                        roles.iter().copied().collect::<Vec<_>>().join(", ")
                    )),
                );
            }
        }
        let mut experts = BTreeMap::new();
        for s in &m.skills {
            if let Some(entry) = resolve_expert(draft, s, &index, sink) {
                experts.insert(entry.role.clone(), entry);
            }
        }
        let mut entry = draft.entry.clone();
        entry.triggers = validate_triggers(
            &draft.triggers,
            &experts.iter().map(|(r, e)| (r.clone(), e)).collect(),
            &entry.sources,
            &draft.doc,
            sink,
        );
        catalog
            .experts
            .extend(experts.into_values().map(|e| (e.id.clone(), e)));
        catalog.meshes.insert(m.name.clone(), entry);
    }
    sink.items.sort_by(|a, b| a.file.cmp(&b.file));
    sink.items.is_empty().then_some(catalog)
}
