//! The probe: real servers listed once, recorded under their descriptor hash; a build
//! without a probe keeps the records and says which are stale; conflicts are reported.

use crate::support_tools as support;

use iron::aem;
use iron::core::effect::Effect;
use iron::tools::probe::{ProbeOptions, manifest_status, probe};
use std::time::Duration;

#[tokio::test]
async fn probe_records_schemas_and_annotations_and_detects_staleness() {
    let p = support::tool_lab();
    let options = ProbeOptions {
        env: p.env(),
        workdir: p.work(),
        start_timeout: Duration::from_secs(60),
    };
    let report = probe(&p.catalog, &p.build_dir(), &options).await.unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!(report.probed, ["lab/faulty", "lab/fs", "lab/time"]);
    assert_eq!(report.status.probed, ["lab/faulty", "lab/fs", "lab/time"]);
    assert_eq!(
        report.missing,
        [("lab/faulty".to_string(), "list_nothing".to_string())]
    );
    // hasty holds write_file at read-write with no declaration: the annotation conflicts.
    let conflicts: Vec<(&str, &str)> = report
        .conflicts
        .iter()
        .map(|c| (c.expert.as_str(), c.tool.as_str()))
        .collect();
    assert!(
        conflicts.contains(&("lab/hasty", "fs/write_file")),
        "{conflicts:?}"
    );
    assert!(
        !conflicts.iter().any(|(e, _)| *e == "lab/writer"),
        "{conflicts:?}"
    );

    let manifest = aem::read_tool_manifest(&report.manifest_path).unwrap();
    let fs = &manifest.servers["lab/fs"];
    assert_eq!(fs.origin, "probed");
    let write = &fs.current_probe().unwrap().tools["write_file"];
    assert_eq!(write.annotation, Some(Effect::Destructive));
    assert!(
        write.input_schema["properties"]["path"].is_object(),
        "{}",
        write.input_schema
    );
    let delete = &manifest.servers["lab/faulty"]
        .current_probe()
        .unwrap()
        .tools["delete_record"];
    assert_eq!(
        delete.annotation,
        Some(Effect::Read),
        "recorded as claimed; gate 1 ignores it"
    );

    // Change one descriptor and build without a probe: records carried, that one stale.
    let mut catalog = p.catalog.clone();
    let time = catalog
        .meshes
        .get_mut("lab")
        .unwrap()
        .servers
        .get_mut("time")
        .unwrap();
    if let aem::ServerDescriptor::Local { env, .. } = &mut time.descriptor {
        env.insert("TZ".into(), "${LAB_TZ:-Europe/Paris}".into());
    }
    time.descriptor_hash = aem::descriptor_hash(&time.descriptor);
    aem::write_catalog(&catalog, &p.build_dir()).unwrap();
    let status = manifest_status(&p.build_dir()).unwrap();
    assert_eq!(status.probed, ["lab/faulty", "lab/fs"]);
    assert_eq!(status.stale, ["lab/time"]);

    // The manager offers the probed schemas to the model.
    let manifest = aem::read_tool_manifest(&p.build_dir().join(aem::TOOL_MANIFEST_FILE)).unwrap();
    let m = iron::tools::ToolManager::new(&catalog, &manifest, "lab/writer", p.setup()).unwrap();
    let wt = m
        .model_tools()
        .into_iter()
        .find(|t| t.name == "fs__write_file")
        .unwrap();
    assert!(wt.description.is_some());
    assert!(wt.input_schema["properties"]["content"].is_object());
}
