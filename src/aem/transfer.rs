//! Moving an expert between deployments. What travels is the portable part of its folder:
//! `SKILL.md` (which the compiler has already checked holds nothing deployment-specific) and
//! the `flows/` and `tests/` files the catalog recorded. Never `capabilities.md` (this
//! deployment's grants), never a hidden or unrecorded file, and never memory: facts live in
//! the state directory's log and projection, which neither direction reads or writes.
//!
//! Export copies from a tree that compiles, checking each file against the hash the compiler
//! recorded; import refuses a folder holding anything but the portable files, and keeps the
//! imported folder only if the tree still compiles with it.

use super::error::CatalogErrors;
use super::sha256_hex;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The entries a transported skill folder may hold.
pub const PORTABLE_ENTRIES: &[&str] = &["SKILL.md", "flows", "tests"];

/// Why an export or import did not happen.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The tree does not compile (before an export, or with the imported folder in it).
    #[error("{0}")]
    Catalog(#[from] CatalogErrors),
    /// No expert of that id in the catalog.
    #[error(
        "no expert `{0}` in the catalog (give `<mesh>/<role>` as `iron catalog check` lists it)"
    )]
    UnknownExpert(String),
    /// The destination exists; nothing is overwritten.
    #[error("{} already exists; nothing was written (remove it or choose another place)", .0.display())]
    Exists(PathBuf),
    /// A file changed between compiling and copying.
    #[error("{} changed while it was being exported; run the export again", .0.display())]
    Changed(PathBuf),
    /// The folder to import holds something that does not travel.
    #[error(
        "{} cannot be imported: {why} (a skill folder travels with only {})",
        path.display(),
        PORTABLE_ENTRIES.join(", ")
    )]
    NotPortable {
        /// The offending entry.
        path: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The mesh to import into does not exist.
    #[error("no mesh folder {} (with an AEM.md) to import into", .0.display())]
    UnknownMesh(PathBuf),
    /// Another SKILL.md that does not compile in this tree (what is wrong, file:line).
    #[error("{0}")]
    SkillRefused(String),
    /// Reading or writing failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> TransferError {
    let what = what.into();
    move |source| TransferError::Io { what, source }
}

/// A finished export or import: where the folder is and the files it holds (relative,
/// `/`-separated, sorted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transferred {
    /// The skill folder written.
    pub dir: PathBuf,
    /// Its files.
    pub files: Vec<String>,
}

/// Writes the portable part of expert `id` (`<mesh>/<role>`) of the tree `aem_dir` to
/// `out_dir/<folder>`, where `<folder>` is the name of its folder in the tree.
pub fn export_skill(
    aem_dir: &Path,
    id: &str,
    out_dir: &Path,
) -> Result<Transferred, TransferError> {
    let catalog = super::compile(aem_dir)?;
    let entry = catalog
        .experts
        .get(id)
        .ok_or_else(|| TransferError::UnknownExpert(id.to_string()))?;
    let source = skill_folder(aem_dir, &entry.mesh, &entry.hashes.skill)?
        .ok_or_else(|| TransferError::UnknownExpert(id.to_string()))?;
    let name = source.file_name().unwrap_or_default();
    let dest = out_dir.join(name);
    if dest.exists() {
        return Err(TransferError::Exists(dest));
    }
    let mut files = vec![("SKILL.md".to_string(), entry.hashes.skill.clone())];
    files.extend(
        entry
            .flows
            .iter()
            .chain(&entry.tests)
            .map(|r| (r.path.clone(), r.sha256.clone())),
    );
    fs::create_dir_all(out_dir).map_err(io_err(format!("creating {}", out_dir.display())))?;
    let staging = tempfile::Builder::new()
        .prefix(".iron-export-")
        .tempdir_in(out_dir)
        .map_err(io_err(format!(
            "creating a folder in {}",
            out_dir.display()
        )))?;
    for (rel, sha) in &files {
        let from = source.join(rel);
        let bytes = fs::read(&from).map_err(io_err(format!("reading {}", from.display())))?;
        if sha256_hex(&bytes) != *sha {
            return Err(TransferError::Changed(from));
        }
        let to = staging.path().join(rel);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(io_err(format!("creating {}", parent.display())))?;
        }
        fs::write(&to, bytes).map_err(io_err(format!("writing {}", to.display())))?;
    }
    fs::rename(staging.keep(), &dest).map_err(io_err(format!("writing {}", dest.display())))?;
    let mut files: Vec<String> = files.into_iter().map(|(rel, _)| rel).collect();
    files.sort();
    Ok(Transferred { dir: dest, files })
}

/// The folder under `aem_dir/<mesh>/skills/` whose SKILL.md hashes to `skill_sha` (the
/// compiler refuses two folders of one mesh with the same role, so at most one does).
fn skill_folder(
    aem_dir: &Path,
    mesh: &str,
    skill_sha: &str,
) -> Result<Option<PathBuf>, TransferError> {
    let skills = aem_dir.join(mesh).join("skills");
    let read = fs::read_dir(&skills).map_err(io_err(format!("reading {}", skills.display())))?;
    for item in read {
        let item = item.map_err(io_err(format!("reading {}", skills.display())))?;
        let skill = item.path().join("SKILL.md");
        if let Ok(bytes) = fs::read(&skill)
            && sha256_hex(&bytes) == skill_sha
        {
            return Ok(Some(item.path()));
        }
    }
    Ok(None)
}

/// The catalog `aem_dir` would compile to with the expert `id`'s SKILL.md replaced by the file
/// `skill` (to try another skill without touching the folders: `iron task fork --skill`). The
/// tree is compiled from a copy, so the other SKILL.md is checked like any.
pub fn compile_with_skill(
    aem_dir: &Path,
    id: &str,
    skill: &Path,
) -> Result<super::Catalog, TransferError> {
    let catalog = super::compile(aem_dir)?;
    let entry = catalog
        .experts
        .get(id)
        .ok_or_else(|| TransferError::UnknownExpert(id.to_string()))?;
    let folder = skill_folder(aem_dir, &entry.mesh, &entry.hashes.skill)?
        .ok_or_else(|| TransferError::UnknownExpert(id.to_string()))?;
    let text = fs::read(skill).map_err(io_err(format!("reading {}", skill.display())))?;
    let copy = tempfile::tempdir().map_err(io_err("creating a folder to compile in"))?;
    copy_tree(aem_dir, copy.path())?;
    let relative = folder.strip_prefix(aem_dir).unwrap_or(&folder);
    let target = copy.path().join(relative).join("SKILL.md");
    fs::write(&target, text).map_err(io_err(format!("writing {}", target.display())))?;
    // Its errors name the file as given, not the copy.
    super::compile(copy.path()).map_err(|errors| {
        let copied = target.display().to_string();
        TransferError::SkillRefused(
            errors
                .to_string()
                .replace(&copied, &skill.display().to_string()),
        )
    })
}

/// Copies the directory tree `from` into `to` (files and folders; a link is not followed).
fn copy_tree(from: &Path, to: &Path) -> Result<(), TransferError> {
    fs::create_dir_all(to).map_err(io_err(format!("creating {}", to.display())))?;
    let read = fs::read_dir(from).map_err(io_err(format!("reading {}", from.display())))?;
    for item in read {
        let item = item.map_err(io_err(format!("reading {}", from.display())))?;
        let kind = item
            .file_type()
            .map_err(io_err(format!("reading {}", item.path().display())))?;
        let dest = to.join(item.file_name());
        if kind.is_dir() {
            copy_tree(&item.path(), &dest)?;
        } else if kind.is_file() {
            fs::copy(item.path(), &dest).map_err(io_err(format!("writing {}", dest.display())))?;
        }
    }
    Ok(())
}

/// Copies the skill folder `from` into `aem_dir/<mesh>/skills/<folder name>` and compiles the
/// tree; if it does not compile, the copy is removed and the errors returned. `from` must hold
/// a SKILL.md and nothing but [`PORTABLE_ENTRIES`]: no `capabilities.md` (grants are this
/// deployment's to write), no hidden files, no links, no data of any kind.
pub fn import_skill(aem_dir: &Path, mesh: &str, from: &Path) -> Result<Transferred, TransferError> {
    let mesh_dir = aem_dir.join(mesh);
    if !super::valid_name(mesh) || !mesh_dir.join("AEM.md").is_file() {
        return Err(TransferError::UnknownMesh(mesh_dir));
    }
    let name = from
        .canonicalize()
        .map_err(io_err(format!("reading {}", from.display())))?
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !super::valid_name(&name) {
        return Err(TransferError::NotPortable {
            path: from.to_path_buf(),
            why: "its folder name is not a valid expert folder name ([a-z][a-z0-9_-]*)",
        });
    }
    let files = portable_files(from)?;
    if !files.iter().any(|f| f == "SKILL.md") {
        return Err(TransferError::NotPortable {
            path: from.join("SKILL.md"),
            why: "there is no SKILL.md",
        });
    }
    let dest = mesh_dir.join("skills").join(&name);
    if dest.exists() {
        return Err(TransferError::Exists(dest));
    }
    for rel in &files {
        let to = dest.join(rel);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(io_err(format!("creating {}", parent.display())))?;
        }
        fs::copy(from.join(rel), &to).map_err(io_err(format!("writing {}", to.display())))?;
    }
    if let Err(errors) = super::compile(aem_dir) {
        // Best effort: the folder did not exist before and holds only what was just copied.
        let _ = fs::remove_dir_all(&dest);
        return Err(errors.into());
    }
    Ok(Transferred { dir: dest, files })
}

/// Every file of the folder `dir` that may travel, relative and sorted; any other entry is
/// refused.
fn portable_files(dir: &Path) -> Result<Vec<String>, TransferError> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), true)];
    while let Some((d, top)) = stack.pop() {
        let mut items = fs::read_dir(&d)
            .and_then(|read| read.collect::<io::Result<Vec<_>>>())
            .map_err(io_err(format!("reading {}", d.display())))?;
        items.sort_by_key(|i| i.file_name());
        for item in items {
            let path = item.path();
            let name = item.file_name().to_string_lossy().into_owned();
            let meta = fs::symlink_metadata(&path)
                .map_err(io_err(format!("reading {}", path.display())))?;
            let refuse = |why| TransferError::NotPortable {
                path: path.clone(),
                why,
            };
            if name == "capabilities.md" && top {
                return Err(refuse(
                    "capabilities.md holds the grants of the deployment it came from; import without it, then write this deployment's",
                ));
            }
            if name.starts_with('.') {
                return Err(refuse("hidden entries do not travel"));
            }
            if meta.file_type().is_symlink() {
                return Err(refuse("symbolic links do not travel"));
            }
            if top && !PORTABLE_ENTRIES.contains(&name.as_str()) {
                return Err(refuse("it is not part of a skill folder"));
            }
            if meta.is_dir() {
                if top && name == "SKILL.md" {
                    return Err(refuse("SKILL.md must be a file"));
                }
                stack.push((path, false));
            } else if meta.is_file() {
                if top && name != "SKILL.md" {
                    return Err(refuse("flows and tests are folders"));
                }
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                out.push(
                    rel.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/"),
                );
            } else {
                return Err(refuse("it is not a regular file or folder"));
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let mesh = t.path().join("aem/m");
        fs::create_dir_all(mesh.join("skills/helper/flows")).unwrap();
        fs::write(
            mesh.join("AEM.md"),
            "---\nname: m\nstatus: active\ndescription: A test mesh.\ndefaults:\n  model: small\n---\nA mesh.\n",
        )
        .unwrap();
        fs::write(
            mesh.join("skills/helper/SKILL.md"),
            "---\nname: helper\nidentity: A helper.\ndescription: Helps with tests.\n---\nHelp.\n",
        )
        .unwrap();
        fs::write(
            mesh.join("skills/helper/capabilities.md"),
            "---\nclearance: read\n---\n",
        )
        .unwrap();
        fs::write(
            mesh.join("skills/helper/flows/go.py"),
            "def run(ctx, inp):\n    return inp\n",
        )
        .unwrap();
        fs::write(mesh.join("skills/helper/.notes.db"), "private").unwrap();
        t
    }

    #[test]
    fn export_takes_the_portable_files_only_and_import_round_trips() {
        let t = tree();
        let aem = t.path().join("aem");
        let out = t.path().join("out");
        let done = export_skill(&aem, "m/helper", &out).unwrap();
        assert_eq!(done.dir, out.join("helper"));
        assert_eq!(done.files, ["SKILL.md", "flows/go.py"]);
        let mut on_disk: Vec<_> = walk(&done.dir);
        on_disk.sort();
        assert_eq!(on_disk, ["SKILL.md", "flows/go.py"]);
        assert!(matches!(
            export_skill(&aem, "m/helper", &out),
            Err(TransferError::Exists(_))
        ));
        assert!(matches!(
            export_skill(&aem, "m/nobody", &out),
            Err(TransferError::UnknownExpert(_))
        ));

        // Into another deployment's mesh of the same shape.
        let other = tempfile::tempdir().unwrap();
        let aem2 = other.path().join("aem");
        fs::create_dir_all(aem2.join("m/skills")).unwrap();
        fs::copy(aem.join("m/AEM.md"), aem2.join("m/AEM.md")).unwrap();
        let imported = import_skill(&aem2, "m", &done.dir).unwrap();
        assert_eq!(imported.files, ["SKILL.md", "flows/go.py"]);
        let catalog = crate::aem::compile(&aem2).unwrap();
        assert!(catalog.experts.contains_key("m/helper"));
        assert!(matches!(
            import_skill(&aem2, "m", &done.dir),
            Err(TransferError::Exists(_))
        ));
    }

    #[test]
    fn import_refuses_what_does_not_travel_and_keeps_nothing_of_a_bad_folder() {
        let t = tree();
        let aem = t.path().join("aem");
        let original = aem.join("m/skills/helper");
        let refused = import_skill(&aem, "m", &original).unwrap_err();
        assert!(refused.to_string().contains(".notes.db"), "{refused}");
        fs::remove_file(original.join(".notes.db")).unwrap();
        let refused = import_skill(&aem, "m", &original).unwrap_err();
        assert!(refused.to_string().contains("capabilities.md"), "{refused}");
        let folder = t.path().join("incoming/extra");
        fs::create_dir_all(&folder).unwrap();
        fs::write(
            folder.join("SKILL.md"),
            "---\nname: extra\nidentity: An extra.\ndescription: More.\n---\nx\n",
        )
        .unwrap();
        fs::write(folder.join("memory.db"), "facts").unwrap();
        let refused = import_skill(&aem, "m", &folder).unwrap_err();
        assert!(refused.to_string().contains("memory.db"), "{refused}");
        fs::remove_file(folder.join("memory.db")).unwrap();
        assert!(matches!(
            import_skill(&aem, "nomesh", &folder),
            Err(TransferError::UnknownMesh(_))
        ));
        // A SKILL.md that is not portable is refused by the compiler and leaves nothing.
        fs::write(
            folder.join("SKILL.md"),
            "---\nname: extra\nidentity: An extra.\ndescription: More.\n---\nPost to https://hooks.example.com/x\n",
        )
        .unwrap();
        let refused = import_skill(&aem, "m", &folder).unwrap_err();
        assert!(matches!(refused, TransferError::Catalog(_)), "{refused}");
        assert!(!aem.join("m/skills/extra").exists());
    }

    fn walk(dir: &Path) -> Vec<String> {
        portable_files(dir).unwrap()
    }
}
