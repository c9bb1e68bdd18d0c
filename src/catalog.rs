//! The crawler catalog: product tokens with their operator, category and how to verify them.
//!
//! The shipped catalog is `conf/bots.yaml`, embedded in the binary; an operator may point to
//! their own file with the same schema.

use crate::agent::{Category, KnownAgent};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The catalog shipped with crawlgate (`conf/bots.yaml`).
pub const EMBEDDED_CATALOG: &str = include_str!("../conf/bots.yaml");

/// How a crawler's claim can be checked, as its operator documents it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verification {
    /// Where the operator publishes its IP ranges (JSON with `prefixes`).
    pub ranges_url: Option<String>,
    /// Domain suffixes its reverse DNS names end in (forward-confirmed).
    #[serde(default)]
    pub reverse_dns: Vec<String>,
}

/// One crawler of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogEntry {
    /// The product token, as the operator documents it for robots.txt.
    pub token: String,
    /// Who runs it.
    pub operator: String,
    /// What it is for.
    pub category: Category,
    /// The operator's documentation.
    pub docs: Option<String>,
    /// How to verify it.
    pub verify: Option<Verification>,
}

impl CatalogEntry {
    /// The entry as the classifier knows it.
    pub fn known_agent(&self) -> KnownAgent {
        KnownAgent {
            token: self.token.clone(),
            operator: Some(self.operator.clone()),
            category: self.category,
        }
    }
}

/// A crawler catalog.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// The crawlers, in file order.
    pub bots: Vec<CatalogEntry>,
}

/// A catalog that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The file could not be read.
    #[error("cannot read catalog {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The YAML does not fit the schema (the message names the entry, line and column).
    #[error("catalog {origin}: {message}")]
    Invalid {
        /// The file, or `embedded`.
        origin: String,
        /// What is wrong, and where.
        message: String,
    },
}

impl Catalog {
    /// The catalog shipped with crawlgate.
    pub fn embedded() -> Result<Catalog, CatalogError> {
        Self::from_yaml(EMBEDDED_CATALOG, "embedded")
    }

    /// Reads a catalog file.
    pub fn from_file(path: &Path) -> Result<Catalog, CatalogError> {
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_yaml(&text, &path.display().to_string())
    }

    /// Reads a catalog from YAML text; `origin` names it in errors.
    pub fn from_yaml(text: &str, origin: &str) -> Result<Catalog, CatalogError> {
        let invalid = |message: String| CatalogError::Invalid {
            origin: origin.to_owned(),
            message,
        };
        let catalog: Catalog = serde_yaml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let mut seen = std::collections::HashMap::new();
        for (index, entry) in catalog.bots.iter().enumerate() {
            if entry.token.is_empty()
                || !entry
                    .token
                    .bytes()
                    .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
            {
                return Err(invalid(format!(
                    "bots[{index}].token: `{}` is not a product token (letters, `-` and `_` only)",
                    entry.token
                )));
            }
            if let Some(first) = seen.insert(entry.token.to_ascii_lowercase(), index) {
                return Err(invalid(format!(
                    "bots[{index}].token: `{}` is already bots[{first}]",
                    entry.token
                )));
            }
        }
        Ok(catalog)
    }

    /// The entries as the classifier knows them.
    pub fn known_agents(&self) -> impl Iterator<Item = KnownAgent> + '_ {
        self.bots.iter().map(CatalogEntry::known_agent)
    }

    /// The entry for a token, compared case-insensitively.
    pub fn get(&self, token: &str) -> Option<&CatalogEntry> {
        self.bots
            .iter()
            .find(|e| e.token.eq_ignore_ascii_case(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_catalog_is_valid_and_large() {
        let catalog = Catalog::embedded().unwrap();
        assert!(catalog.bots.len() >= 100, "{} entries", catalog.bots.len());
        for token in [
            "GPTBot",
            "Googlebot",
            "CCBot",
            "ClaudeBot",
            "Bingbot",
            "PerplexityBot",
        ] {
            assert!(catalog.get(token).is_some(), "{token} missing");
        }
        assert_eq!(
            catalog.get("gptbot").unwrap().category,
            Category::AiTraining
        );
        crate::agent::Classifier::new(catalog.known_agents()).unwrap();
    }

    #[test]
    fn errors_name_the_entry_and_line() {
        let bad_category = "bots:\n  - token: A\n    operator: B\n    category: robots\n";
        let error = Catalog::from_yaml(bad_category, "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(error.contains("bots[0].category"), "{error}");
        assert!(error.contains("line 4"), "{error}");
        let bad_token = "bots:\n  - token: A/1\n    operator: B\n    category: search\n";
        let error = Catalog::from_yaml(bad_token, "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a product token"), "{error}");
        let twice = "bots:\n  - {token: A, operator: B, category: search}\n  - {token: a, operator: C, category: seo}\n";
        let error = Catalog::from_yaml(twice, "t.yaml").unwrap_err().to_string();
        assert!(error.contains("already bots[0]"), "{error}");
        let unknown = "bots:\n  - {token: A, operator: B, category: search, colour: red}\n";
        assert!(Catalog::from_yaml(unknown, "t")
            .unwrap_err()
            .to_string()
            .contains("colour"));
    }
}
