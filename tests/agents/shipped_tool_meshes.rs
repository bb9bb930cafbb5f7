//! The shipped meshes (aem/) compile, and every spawnable expert gets a tool manager with
//! valid model names (no server is started).

use iron::tools::{ManagerSetup, MemoryEvents, PathPolicy, ToolManager};
use std::path::Path;
use std::sync::Arc;

#[test]
fn every_spawnable_shipped_expert_gets_a_manager() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let catalog = iron::aem::compile(&root.join("aem")).unwrap_or_else(|e| panic!("{e}"));
    let manifest = catalog.tool_manifest();
    let policy = PathPolicy::new(root, &root.join("target")).unwrap();
    let mut count = 0;
    for expert in catalog.spawnable() {
        let setup = ManagerSetup::new(
            Arc::new(MemoryEvents::default()),
            policy.clone(),
            root,
            Default::default(),
        );
        let m = ToolManager::new(&catalog, &manifest, &expert.id, setup).unwrap();
        assert_eq!(m.model_tools().len(), expert.tools.len(), "{}", expert.id);
        for t in m.model_tools() {
            assert!(iron::tools::names::valid_model_name(&t.name), "{}", t.name);
        }
        count += 1;
    }
    assert!(count > 0);
}
