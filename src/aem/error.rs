//! Errors of the catalog layer: what is wrong ([`AemError`]), where ([`Diagnostic`]), and
//! every one of them from one build ([`CatalogErrors`]).

use crate::core::effect::{Clearance, Effect, LoweringRefused};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// One thing wrong with an `aem/` tree. The message says what is wrong; the
/// [`Diagnostic`] around it says where and what would be valid.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AemError {
    /// A file or directory could not be read.
    #[error("cannot read: {0}")]
    Io(#[source] Arc<std::io::Error>),
    /// A file the format requires is absent.
    #[error("required file is missing")]
    MissingFile,
    /// A file or directory the format does not know (often a misspelt name).
    #[error("unexpected entry `{0}`")]
    UnexpectedEntry(String),
    /// A symbolic link inside `aem/`.
    #[error("symbolic links are not allowed in aem/")]
    Symlink,
    /// A named pipe, socket or device inside `aem/`.
    #[error("not a regular file (a named pipe, socket or device); it is not read")]
    NotRegular,
    /// The `---` front matter block is absent or unterminated.
    #[error("{0}")]
    FrontMatter(String),
    /// The YAML does not parse, or does not fit the schema (unknown key, wrong type).
    #[error("invalid YAML: {0}")]
    Yaml(String),
    /// A name that cannot be used as an identifier or namespace token.
    #[error("`{value}` is not a valid {what} name")]
    InvalidName {
        /// What the name names (mesh, role, server …).
        what: &'static str,
        /// The name as written.
        value: String,
    },
    /// A name that must equal another one (mesh name vs. its folder).
    #[error("`{found}` does not match `{wanted}`")]
    NameMismatch {
        /// As written.
        found: String,
        /// What it must be.
        wanted: String,
    },
    /// A required field is absent or blank.
    #[error("must be present and not empty")]
    Empty,
    /// A memory kind outside the menu.
    #[error("unknown memory kind `{0}`")]
    UnknownMemoryKind(String),
    /// A memory scope other than own/mesh/system.
    #[error("unknown memory scope `{0}`")]
    UnknownScope(String),
    /// A memory access word other than read/write/read-write.
    #[error("unknown memory access `{0}`")]
    UnknownAccess(String),
    /// An access the memory kind does not allow (derived kinds are never written directly).
    #[error("memory kind `{kind}` cannot be mounted with access `{access}`")]
    AccessNotAllowed {
        /// The memory kind.
        kind: String,
        /// The access asked for.
        access: String,
    },
    /// The same kind and scope declared twice.
    #[error("memory `{kind}` with scope `{scope}` is declared twice")]
    DuplicateMemory {
        /// The memory kind.
        kind: String,
        /// The scope.
        scope: String,
    },
    /// A clearance word outside the list.
    #[error("unknown clearance `{0}`")]
    UnknownClearance(String),
    /// An effect word outside the list.
    #[error("unknown effect `{0}`")]
    UnknownEffect(String),
    /// A mesh status other than active/parked.
    #[error("unknown mesh status `{0}`")]
    UnknownStatus(String),
    /// A delegation scope other than all/none.
    #[error("unknown delegation scope `{0}`")]
    UnknownDelegationScope(String),
    /// A tool-server transport other than local/native/remote.
    #[error("unknown transport `{0}`")]
    UnknownTransport(String),
    /// A tool-server descriptor that is incomplete or mixes transports.
    #[error("malformed server descriptor: {0}")]
    MalformedServer(String),
    /// An environment value written inline instead of as a `${VAR}` reference.
    #[error("environment value of `{0}` is inline; secrets and settings come by reference only")]
    InlineEnvValue(String),
    /// A declaration the runtime does not honour yet (refused rather than ignored).
    #[error("{0} is not implemented")]
    NotImplemented(String),
    /// A trigger that cannot be honoured as written.
    #[error("malformed trigger: {0}")]
    MalformedTrigger(String),
    /// A perception startup mode outside the list.
    #[error("unknown startup mode `{0}`")]
    UnknownStartup(String),
    /// A timeout, lifetime or budget of zero or beyond its limit.
    #[error("`{value}` {unit} is out of range")]
    OutOfRange {
        /// The value as written.
        value: String,
        /// What it counts (`seconds`, `tokens`, …).
        unit: &'static str,
    },
    /// A tool reference that is not `server/tool`.
    #[error("`{0}` is not a tool reference")]
    MalformedToolRef(String),
    /// A server name absent from the mesh's registry.
    #[error("unknown server `{0}`")]
    UnknownServer(String),
    /// A tool its server does not declare.
    #[error("server `{server}` declares no tool `{tool}`")]
    UnknownTool {
        /// The server.
        server: String,
        /// The tool asked for.
        tool: String,
    },
    /// The same tool declared twice by one server.
    #[error("tool `{0}` is declared twice")]
    DuplicateTool(String),
    /// A granted tool whose effect needs more clearance than the expert has.
    #[error(
        "tool `{tool}` has effect `{effect}` ({why}) and needs clearance `{needed}`, but expert `{expert}` has `{clearance}`"
    )]
    ToolAboveClearance {
        /// `<mesh>/<role>`.
        expert: String,
        /// `server/tool`.
        tool: String,
        /// The resolved effect.
        effect: Effect,
        /// Where the effect came from (verb, default, annotation, declaration).
        why: String,
        /// Clearance the effect needs.
        needed: Clearance,
        /// Clearance the expert has.
        clearance: Clearance,
    },
    /// A human effect declaration beyond the lowering cap.
    #[error("effect declaration for `{tool}` over-reaches: {refused}")]
    LoweringOverCap {
        /// `server/tool`.
        tool: String,
        /// What the cap refused.
        refused: LoweringRefused,
    },
    /// A local server holding write-class tools names a path outside the scratch workspace
    /// and `workspace/` (see [`crate::aem::roots`]).
    #[error(
        "expert `{expert}` holds write-class tools of `{server}` ({tools}), but its argument `{arg}` {why}"
    )]
    WriteOutsideWorkspace {
        /// `<mesh>/<role>`.
        expert: String,
        /// Server name.
        server: String,
        /// The write-class tools held, comma-separated.
        tools: String,
        /// The argument.
        arg: String,
        /// Why it is refused.
        why: String,
    },
    /// `workspace:` is malformed, or a server needs a scratch the mesh does not declare.
    #[error("{0}")]
    BadWorkspace(String),
    /// An effect declaration for a tool the expert is not granted.
    #[error("effect declared for `{0}`, which this expert is not granted")]
    StrayEffectDeclaration(String),
    /// A peer that is not an expert of any mesh.
    #[error("unknown peer `{0}`")]
    UnknownPeer(String),
    /// A peer that belongs to a parked mesh.
    #[error("peer `{0}` belongs to a parked mesh and cannot be spawned")]
    ParkedPeer(String),
    /// An expert naming itself as a peer.
    #[error("an expert cannot be its own peer")]
    SelfPeer,
    /// A perception source absent from the mesh's `msp.sources`.
    #[error("unknown perception source `{0}`")]
    UnknownSource(String),
    /// A role absent from the mesh.
    #[error("unknown role `{0}`")]
    UnknownRole(String),
    /// A delivery channel absent from the mesh's `delivery`.
    #[error("unknown delivery channel `{0}`")]
    UnknownChannel(String),
    /// A delivery block that is incomplete or malformed.
    #[error("malformed delivery channel: {0}")]
    MalformedDelivery(String),
    /// Two experts of one mesh with the same role.
    #[error("role `{role}` is already defined by {other}")]
    DuplicateRole {
        /// The role.
        role: String,
        /// The other SKILL.md.
        other: String,
    },
    /// Deployment-specific data in a portable SKILL.md.
    #[error("SKILL.md must be portable but contains {what} `{text}`")]
    DeploymentData {
        /// What was found (server name, host, absolute path, secret …).
        what: &'static str,
        /// The offending text (secrets are shortened).
        text: String,
    },
}

impl From<std::io::Error> for AemError {
    fn from(e: std::io::Error) -> Self {
        AemError::Io(Arc::new(e))
    }
}

/// One error with its place: file, line (where known), field, and what would be valid.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    /// The file (as reached from the `aem` directory given to the compiler).
    pub file: PathBuf,
    /// 1-based line in the file, when the parser or a search could tell.
    pub line: Option<usize>,
    /// Dotted path of the field (`memory[0].kind`); empty for whole-file errors.
    pub field: String,
    /// What is wrong.
    pub error: AemError,
    /// What would be valid, when there is a short answer.
    pub expected: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(f, "{}", self.error)?;
        if let Some(expected) = &self.expected {
            write!(f, " (expected {expected})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Every error found in one build, in a stable order (by file, then as found).
#[derive(Debug, Clone)]
pub struct CatalogErrors(pub Vec<Diagnostic>);

impl CatalogErrors {
    /// The errors, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }

    /// How many errors the build found.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none (a [`CatalogErrors`] returned by the compiler never is).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for CatalogErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CatalogErrors {}

/// Collects diagnostics while the compiler walks the tree.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub(crate) items: Vec<Diagnostic>,
}

impl Sink {
    /// Records one error.
    pub(crate) fn push(
        &mut self,
        file: &std::path::Path,
        line: Option<usize>,
        field: impl Into<String>,
        error: AemError,
        expected: Option<String>,
    ) {
        self.items.push(Diagnostic {
            file: file.to_path_buf(),
            line,
            field: field.into(),
            error,
            expected,
        });
    }
}
