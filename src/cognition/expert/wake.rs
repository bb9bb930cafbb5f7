//! What an expert reads when a task wakes it: its own memory mounts and its perception
//! sources. Both are read per task, from where they live (the projection, the sources
//! themselves); nothing of them is kept in the process between tasks.
//!
//! Memory follows the declaration: each mount of a kind that is recalled (episodic, semantic)
//! with read access reaches the namespace prefixes of its scope (`own` → `facts/<mesh>/<role>`
//! and `facts/system`, …), searched by the task's words; a readable `procedural` mount gives the
//! newest lessons under its prefixes, whatever the task. No declaration, no memory. Perception
//! follows the grants: only the sources `capabilities.md` names are read.

use crate::protocol::payload::{FactLearned, InjectedItem, LessonLearned};
use std::{path::PathBuf, sync::Arc, time::Duration};

use tracing::debug;

use crate::{
    aem::{Access, Catalog, ExpertEntry, MemoryMount},
    core::{config::Config, event_kind::EventKind},
    memory::{
        documents,
        node::Worker,
        recall::{Recall, RecallFilter, Recalled},
        semantic::{self, Embedder},
    },
    msp::reader::{self, Reading},
    spine::durable::AnyLog,
};

/// Memory kinds an expert recalls from the projection by the task's words.
const RECALLED_KINDS: &[&str] = &["episodic", "semantic"];
/// Recalled items kept per task.
const RECALLED: usize = 8;
/// Lessons shown per task.
const LESSONS: usize = 3;
/// Passages of saved documents shown per task.
const PASSAGES: usize = 3;
/// Characters kept of each.
const ITEM_CHARS: usize = 300;
/// How long the embedder may take to embed a task (beyond it, recall is by words).
const EMBED_WAIT: Duration = Duration::from_secs(10);
/// How long each source may take to answer.
pub const SOURCE_WAIT: Duration = Duration::from_secs(5);

/// The namespace prefixes `mounts` let an expert recall from: readable mounts of recalled
/// kinds, sorted, without repeats or prefixes nested in another.
pub fn recall_prefixes(mounts: &[MemoryMount]) -> Vec<String> {
    readable_prefixes(mounts, RECALLED_KINDS)
}

/// The namespace prefixes whose lessons an expert is shown: its readable `procedural` mounts.
pub fn lesson_prefixes(mounts: &[MemoryMount]) -> Vec<String> {
    readable_prefixes(mounts, &["procedural"])
}

/// The prefixes of `mounts` of `kinds` with read access, sorted, without repeats or prefixes
/// nested in another.
fn readable_prefixes(mounts: &[MemoryMount], kinds: &[&str]) -> Vec<String> {
    let mut prefixes: Vec<String> = mounts
        .iter()
        .filter(|m| kinds.contains(&m.kind.as_str()))
        .filter(|m| matches!(m.access, Access::Read | Access::ReadWrite))
        .flat_map(|m| m.namespaces.iter().cloned())
        .collect();
    prefixes.sort();
    prefixes.dedup();
    let all = prefixes.clone();
    prefixes.retain(|p| !all.iter().any(|q| p.starts_with(&format!("{q}/"))));
    prefixes
}

/// Most words of an instruction that recall searches for.
const RECALL_WORDS: usize = 64;

/// What recall searches for: the instruction's own words, without a structured task's data
/// (an `iron-task` block can hold thousands of items, which would make the search both slow
/// and meaningless), at most [`RECALL_WORDS`] of them.
pub fn recall_query(instruction: &str) -> String {
    crate::protocol::instruction_prose(instruction)
        .split_whitespace()
        .take(RECALL_WORDS)
        .collect::<Vec<_>>()
        .join(" ")
}

/// How a recalled event reads in a memory block: a fact or a lesson as its statement,
/// anything else as its payload.
fn readable(event: &Recalled) -> String {
    let statement = if event.kind == EventKind::FactLearned.as_str() {
        serde_json::from_str::<FactLearned>(&event.payload)
            .ok()
            .and_then(|f| f.statement)
    } else if event.kind == EventKind::LessonLearned.as_str() {
        serde_json::from_str::<LessonLearned>(&event.payload)
            .ok()
            .map(|l| l.statement)
    } else {
        None
    };
    statement.unwrap_or_else(|| event.payload.clone())
}

/// What recall gave one task: the memory block the model reads, and which events it holds
/// (written to the log as `memory_injected`).
#[derive(Debug, Clone)]
pub struct Injected {
    /// The block, one line per item, each with its namespace.
    pub text: String,
    /// The prefixes searched.
    pub prefixes: Vec<String>,
    /// The events in the block, best first.
    pub items: Vec<InjectedItem>,
}

/// An expert's mounts, resolved at `configure`.
#[derive(Clone)]
pub struct Mounts {
    /// Embeds the task for hybrid recall (the one the semantic index uses).
    embedder: Arc<dyn Embedder>,
    projection: PathBuf,
    /// The semantic index (hybrid recall when it exists).
    semantic: PathBuf,
    /// The passages of saved documents.
    documents: PathBuf,
    tenant: String,
    mesh: String,
    /// Namespace prefixes it may recall from, sorted, without repeats.
    pub prefixes: Vec<String>,
    /// Namespace prefixes whose lessons it is shown.
    pub lessons: Vec<String>,
    /// Granted sources: (name, description).
    pub sources: Vec<(String, String)>,
}

impl Mounts {
    /// The mounts of `entry`: recall prefixes from its memory declarations, sources from its
    /// grants (described by its mesh's registry); the stores and tenant from `config`.
    pub fn new(entry: &ExpertEntry, catalog: &Catalog, config: &Config) -> Self {
        let prefixes = recall_prefixes(&entry.memory);
        let lessons = lesson_prefixes(&entry.memory);
        let registry = catalog.mesh(&entry.mesh).map(|m| &m.sources);
        let sources = entry
            .sources
            .iter()
            .map(|s| {
                let description = registry
                    .and_then(|r| r.get(s))
                    .map(|e| e.description.clone())
                    .unwrap_or_default();
                (s.clone(), description)
            })
            .collect();
        Self {
            embedder: Arc::new(semantic::HashingEmbedder),
            projection: config.state_path(&config.memory.projection),
            semantic: Worker::Semantic.state(config),
            documents: Worker::Documents.state(config),
            tenant: config.tenant.clone(),
            mesh: entry.mesh.clone(),
            prefixes,
            lessons,
            sources,
        }
    }

    /// Embeds tasks with `embedder` (the configured one; the offline one by default).
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = embedder;
        self
    }

    /// What the expert's memory holds that bears on `instruction`, and the lessons for its
    /// role (`None`: nothing, or no projection yet): the current beliefs only, never a
    /// superseded fact.
    pub async fn recall(&self, instruction: &str) -> Option<Injected> {
        if (self.prefixes.is_empty() && self.lessons.is_empty()) || !self.projection.is_file() {
            return None;
        }
        let (path, semantic, documents, tenant, prefixes, lessons) = (
            self.projection.clone(),
            self.semantic.clone(),
            self.documents.clone(),
            self.tenant.clone(),
            self.prefixes.clone(),
            self.lessons.clone(),
        );
        let instruction = recall_query(instruction);
        // A task the embedder cannot embed (its server down) is recalled by its words.
        let vector = if self.prefixes.is_empty() {
            None
        } else {
            semantic::embed_query(&*self.embedder, &instruction, EMBED_WAIT)
                .await
                .map_err(|e| debug!("recall by words only: {e}"))
                .ok()
        };
        let found = tokio::task::spawn_blocking(move || {
            let recall = Recall::open(&path)?;
            let mut hits = Vec::new();
            for prefix in &prefixes {
                let filter = RecallFilter {
                    prefix: Some(prefix.clone()),
                    tenant: Some(tenant.clone()),
                    limit: RECALLED,
                    ..RecallFilter::default()
                };
                let vector = vector.as_ref();
                hits.extend(semantic::hybrid(
                    &recall,
                    &semantic,
                    &instruction,
                    vector,
                    &filter,
                )?);
            }
            // Lessons come through procedural mounts only.
            hits.retain(|h| h.kind != EventKind::LessonLearned.as_str());
            let mut taught = Vec::new();
            for prefix in &lessons {
                taught.extend(recall.lessons(prefix, &tenant, LESSONS)?);
            }
            // Saved documents under the same prefixes as the facts (no index yet: none).
            let mut passages = Vec::new();
            for prefix in &prefixes {
                let any = documents::Matching::Any;
                match documents::search(
                    &documents,
                    &instruction,
                    any,
                    prefix,
                    Some(&tenant),
                    PASSAGES,
                ) {
                    Ok(found) => passages.extend(found),
                    Err(e) => debug!("no passages from {}: {e}", documents.display()),
                }
            }
            passages.truncate(PASSAGES);
            Ok::<_, crate::memory::recall::RecallError>((hits, taught, passages))
        })
        .await;
        let (mut hits, mut taught, passages) = match found {
            Ok(Ok(h)) => h,
            Ok(Err(e)) => {
                debug!("no recall from {}: {e}", self.projection.display());
                return None;
            }
            Err(_) => return None,
        };
        for list in [&mut hits, &mut taught] {
            list.sort_by_key(|h| std::cmp::Reverse(h.seq));
            list.dedup_by(|a, b| a.event_id == b.event_id);
        }
        hits.truncate(RECALLED);
        taught.truncate(LESSONS);
        if hits.is_empty() && taught.is_empty() && passages.is_empty() {
            return None;
        }
        let text = memory_block((&hits, &self.prefixes), (&taught, &self.lessons), &passages);
        let prefixes = [self.prefixes.clone(), self.lessons.clone()].concat();
        let items = hits
            .into_iter()
            .chain(taught)
            .map(|h| InjectedItem {
                event_id: h.event_id,
                namespace: h.namespace,
                kind: h.kind,
                passage: None,
            })
            .chain(passages.into_iter().map(|p| InjectedItem {
                event_id: p.document,
                namespace: p.namespace,
                kind: EventKind::DocumentSaved.as_str().to_string(),
                passage: Some(p.ordinal),
            }))
            .collect();
        Some(Injected {
            text,
            prefixes,
            items,
        })
    }

    /// Reads every granted source for `reader`; empty when none is granted.
    pub async fn perceive(
        &self,
        node: &hiroz::node::ZNode,
        kv: &AnyLog,
        reader: &str,
    ) -> Vec<Reading> {
        if self.sources.is_empty() {
            return Vec::new();
        }
        reader::read_all(node, kv, &self.mesh, &self.sources, reader, SOURCE_WAIT).await
    }
}

/// The memory block a model reads: recalled facts and lessons, each under its heading with the
/// prefixes searched, then passages of saved documents; one line an item, with where it lives.
fn memory_block(
    (hits, prefixes): (&[Recalled], &[String]),
    (taught, lessons): (&[Recalled], &[String]),
    passages: &[documents::Found],
) -> String {
    let mut text = String::new();
    for (items, heading, searched) in [
        (hits, "From your memory", prefixes),
        (taught, "Lessons for your role", lessons),
    ] {
        if items.is_empty() {
            continue;
        }
        text.push_str(&format!("{heading} ({}):\n", searched.join(", ")));
        for h in items {
            let item: String = readable(h).chars().take(ITEM_CHARS).collect();
            text.push_str(&format!("- [{}] {item}\n", h.namespace));
        }
    }
    if !passages.is_empty() {
        text.push_str("From saved documents:\n");
        for p in passages {
            let item: String = p.text.chars().take(ITEM_CHARS).collect();
            text.push_str(&format!(
                "- [{}] {} (p. {}): {item}\n",
                p.namespace, p.title, p.page
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aem::Scope;

    fn mount(kind: &str, scope: Scope, access: Access, ns: &[&str]) -> MemoryMount {
        MemoryMount {
            kind: kind.into(),
            scope,
            access,
            namespaces: ns.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn recall_searches_the_instructions_words_not_a_tasks_data() {
        let task = format!(
            "Cross-check these claims.\n\n{}\n{{\"reports\": [\"harbour\"]}}\n```",
            crate::llm::offline::TASK_FENCE
        );
        assert_eq!(recall_query(&task), "Cross-check these claims.");
        let long = "word ".repeat(500);
        assert_eq!(recall_query(&long).split(' ').count(), RECALL_WORDS);
    }

    #[test]
    fn only_readable_recalled_kinds_are_mounted_and_nested_prefixes_fold() {
        let mounts = vec![
            mount(
                "working",
                Scope::Own,
                Access::ReadWrite,
                &["facts/n/a", "facts/system"],
            ),
            mount("episodic", Scope::Own, Access::Write, &["facts/x/y"]),
            mount(
                "episodic",
                Scope::Own,
                Access::ReadWrite,
                &["facts/n/a", "facts/system"],
            ),
            mount(
                "semantic",
                Scope::Mesh,
                Access::Read,
                &["facts/n", "facts/system"],
            ),
        ];
        assert_eq!(recall_prefixes(&mounts), ["facts/n", "facts/system"]);
        assert_eq!(recall_prefixes(&mounts[..2]), Vec::<String>::new());
        assert_eq!(
            recall_prefixes(&mounts[2..3]),
            ["facts/n/a", "facts/system"]
        );
    }
}
