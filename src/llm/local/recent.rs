//! The vectors the model service made lately, by text: a newsroom judges its whole window again
//! on every refresh, and its grouping and its cross-check each embed every report, so nearly all
//! of a request's texts were embedded moments before. Bounded: two generations of at most
//! [`Recent::new`]'s `per_generation` texts each; when the newer is full it becomes the older and
//! the older is dropped, so a text asked for in either generation stays.

use std::collections::HashMap;

/// Recently made vectors by text (see the module docs).
#[derive(Debug)]
pub(super) struct Recent {
    newer: HashMap<String, Vec<f32>>,
    older: HashMap<String, Vec<f32>>,
    per_generation: usize,
}

impl Recent {
    /// Keeps at most `2 × per_generation` texts.
    pub(super) fn new(per_generation: usize) -> Self {
        Self {
            newer: HashMap::new(),
            older: HashMap::new(),
            per_generation: per_generation.max(1),
        }
    }

    /// The vector made for `text`, if it is remembered; one found in the older generation moves
    /// to the newer.
    pub(super) fn get(&mut self, text: &str) -> Option<Vec<f32>> {
        if let Some(vector) = self.newer.get(text) {
            return Some(vector.clone());
        }
        let vector = self.older.remove(text)?;
        self.put(text.to_string(), vector.clone());
        Some(vector)
    }

    /// Remembers `vector` as the one made for `text`.
    pub(super) fn put(&mut self, text: String, vector: Vec<f32>) {
        if self.newer.len() >= self.per_generation && !self.newer.contains_key(&text) {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(text, vector);
    }

    /// How many texts are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_vectors_are_kept_within_two_generations() {
        let mut recent = Recent::new(2);
        let v = |x: f32| vec![x; 3];
        recent.put("a".into(), v(1.0));
        recent.put("b".into(), v(2.0));
        assert_eq!(recent.get("a"), Some(v(1.0)));
        // The newer generation is full: "c" starts a new one, "a" and "b" are the older.
        recent.put("c".into(), v(3.0));
        assert_eq!(recent.len(), 3);
        // Asking for "a" brings it forward; "d" then turns the generations again, and "b",
        // asked for in neither, is dropped.
        assert_eq!(recent.get("a"), Some(v(1.0)));
        recent.put("d".into(), v(4.0));
        assert_eq!(recent.get("b"), None);
        assert_eq!(recent.get("a"), Some(v(1.0)));
        assert_eq!(recent.get("c"), Some(v(3.0)));
        assert!(recent.len() <= 4, "{}", recent.len());
        assert_eq!(recent.get("never"), None);
    }
}
