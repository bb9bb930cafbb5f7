//! `iron new mesh` and `iron new expert`: folders that compile at once, every field commented
//! with what it does. A mesh is made with one expert, so it answers a task as soon as it is
//! compiled; an expert gets its SKILL.md, its capabilities.md, a sample flow (`flows/answer.py`)
//! and that flow's test (`tests/test_answer.py`, runnable with plain Python).
//!
//! Nothing existing is overwritten, and what was written is kept only when the whole tree still
//! compiles with it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::error::CatalogErrors;

const AEM_MD: &str = include_str!("scaffold/AEM.md");
const SKILL_MD: &str = include_str!("scaffold/SKILL.md");
const CAPABILITIES_MD: &str = include_str!("scaffold/capabilities.md");
const FLOW: &str = include_str!("scaffold/answer.py");
const FLOW_TEST: &str = include_str!("scaffold/test_answer.py");

/// Why nothing was made.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// A mesh or role name the catalog would refuse.
    #[error("{value:?} is not a valid {what} name: {}", super::rules::name_rule())]
    InvalidName {
        /// `mesh` or `role`.
        what: &'static str,
        /// The name given.
        value: String,
    },
    /// `iron new expert` was given something other than `<mesh>/<role>`.
    #[error("{0:?} is not <mesh>/<role> (e.g. newsroom/fact_checker)")]
    NotAnExpert(String),
    /// The folder exists; nothing is overwritten.
    #[error("{} already exists; nothing was written", .0.display())]
    Exists(PathBuf),
    /// The mesh to add an expert to does not exist.
    #[error("no mesh folder {} with an AEM.md (make one with `iron new mesh`)", .0.display())]
    UnknownMesh(PathBuf),
    /// The tree does not compile with the new folder (it was removed again).
    #[error("the agent folders do not compile with the new one, which was removed:\n{0}")]
    Catalog(#[from] CatalogErrors),
    /// Writing failed.
    #[error("writing {}: {source}", path.display())]
    Io {
        /// What was being written.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// What was made: the folder and its files, relative to the agent folders.
#[derive(Debug)]
pub struct Made {
    /// The new mesh or expert folder.
    pub dir: PathBuf,
    /// Every file written, relative to the agent folders, in the order written.
    pub files: Vec<PathBuf>,
}

/// The role `iron new mesh` gives its first expert.
pub const FIRST_ROLE: &str = "assistant";

fn named(what: &'static str, value: &str) -> Result<(), ScaffoldError> {
    if super::valid_name(value) {
        Ok(())
    } else {
        Err(ScaffoldError::InvalidName {
            what,
            value: value.to_string(),
        })
    }
}

fn fill(template: &str, mesh: &str, role: &str) -> String {
    template.replace("{mesh}", mesh).replace("{role}", role)
}

/// Writes `files` (relative to `aem`, with their text); stops at the first failure.
fn write_all(aem: &Path, files: &[(PathBuf, String)]) -> Result<(), ScaffoldError> {
    for (rel, text) in files {
        let path = aem.join(rel);
        let io = |source| ScaffoldError::Io {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io)?;
        }
        fs::write(&path, text).map_err(io)?;
    }
    Ok(())
}

/// An expert's files, relative to the agent folders.
fn expert_files(mesh: &str, role: &str) -> Vec<(PathBuf, String)> {
    let dir = Path::new(mesh).join("skills").join(role);
    [
        ("SKILL.md", SKILL_MD),
        ("capabilities.md", CAPABILITIES_MD),
        ("flows/answer.py", FLOW),
        ("tests/test_answer.py", FLOW_TEST),
    ]
    .into_iter()
    .map(|(rel, template)| (dir.join(rel), fill(template, mesh, role)))
    .collect()
}

/// Writes `files` into the new folder `dir` and keeps them only if the tree compiles.
fn make(aem: &Path, dir: PathBuf, files: Vec<(PathBuf, String)>) -> Result<Made, ScaffoldError> {
    let created = aem.join(&dir);
    if created.exists() {
        return Err(ScaffoldError::Exists(created));
    }
    let kept = write_all(aem, &files)
        .and_then(|()| super::compile(aem).map(|_| ()).map_err(ScaffoldError::from));
    if let Err(e) = kept {
        // Best effort: the folder did not exist before and holds only what was just written.
        let _ = fs::remove_dir_all(&created);
        return Err(e);
    }
    Ok(Made {
        dir: created,
        files: files.into_iter().map(|(rel, _)| rel).collect(),
    })
}

/// `iron new mesh NAME`: `aem/NAME/AEM.md` and its first expert, [`FIRST_ROLE`].
pub fn new_mesh(aem: &Path, mesh: &str) -> Result<Made, ScaffoldError> {
    named("mesh", mesh)?;
    let mut files = vec![(Path::new(mesh).join("AEM.md"), fill(AEM_MD, mesh, ""))];
    files.extend(expert_files(mesh, FIRST_ROLE));
    make(aem, PathBuf::from(mesh), files)
}

/// `iron new expert MESH/ROLE`: a new expert folder in an existing mesh.
pub fn new_expert(aem: &Path, expert: &str) -> Result<Made, ScaffoldError> {
    let Some((mesh, role)) = expert.split_once('/') else {
        return Err(ScaffoldError::NotAnExpert(expert.to_string()));
    };
    named("mesh", mesh)?;
    named("role", role)?;
    if !aem.join(mesh).join("AEM.md").is_file() {
        return Err(ScaffoldError::UnknownMesh(aem.join(mesh)));
    }
    make(
        aem,
        Path::new(mesh).join("skills").join(role),
        expert_files(mesh, role),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_mesh_and_a_new_expert_compile_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let made = new_mesh(dir.path(), "desk").unwrap();
        assert_eq!(made.files.len(), 5);
        new_expert(dir.path(), "desk/fact_checker").unwrap();
        let catalog = crate::aem::compile(dir.path()).unwrap();
        let ids: Vec<&str> = catalog.experts.keys().map(String::as_str).collect();
        assert_eq!(ids, ["desk/assistant", "desk/fact_checker"]);
        let checker = &catalog.experts["desk/fact_checker"];
        assert_eq!(checker.flows.len(), 1, "{checker:#?}");
        assert_eq!(checker.tests.len(), 1, "{checker:#?}");
        let flow = fs::read_to_string(dir.path().join("desk/skills/fact_checker/flows/answer.py"))
            .unwrap();
        assert!(flow.contains("\"desk/fact_checker\""), "{flow}");
    }

    #[test]
    fn nothing_is_overwritten_and_bad_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        new_mesh(dir.path(), "desk").unwrap();
        let skill = dir.path().join("desk/skills/assistant/SKILL.md");
        fs::write(&skill, "mine").unwrap();
        assert!(matches!(
            new_mesh(dir.path(), "desk"),
            Err(ScaffoldError::Exists(_))
        ));
        assert!(matches!(
            new_expert(dir.path(), "desk/assistant"),
            Err(ScaffoldError::Exists(_))
        ));
        assert_eq!(fs::read_to_string(&skill).unwrap(), "mine");
        for bad in ["Desk", "../x", "", "1desk"] {
            assert!(
                matches!(
                    new_mesh(dir.path(), bad),
                    Err(ScaffoldError::InvalidName { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            new_expert(dir.path(), "desk"),
            Err(ScaffoldError::NotAnExpert(_))
        ));
        assert!(matches!(
            new_expert(dir.path(), "desk/../../x"),
            Err(ScaffoldError::InvalidName { .. })
        ));
        assert!(matches!(
            new_expert(dir.path(), "nowhere/clerk"),
            Err(ScaffoldError::UnknownMesh(_))
        ));
    }

    #[test]
    fn a_tree_that_does_not_compile_with_it_keeps_nothing_new() {
        let dir = tempfile::tempdir().unwrap();
        new_mesh(dir.path(), "desk").unwrap();
        // Another mesh broken by hand: the new expert is removed again, with why.
        fs::create_dir_all(dir.path().join("broken")).unwrap();
        fs::write(dir.path().join("broken/AEM.md"), "---\nname: other\n---\n").unwrap();
        let err = new_expert(dir.path(), "desk/clerk").unwrap_err();
        assert!(matches!(err, ScaffoldError::Catalog(_)), "{err}");
        assert!(!dir.path().join("desk/skills/clerk").exists());
    }
}
