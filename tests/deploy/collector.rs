//! The Collector configs' structure (no Collector binary can be had here),
//! and the Compose file through `docker-compose config` (Compose v5, which
//! needs no engine for it).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;
use toolscore::config::Config;

use super::chart::{NAMESPACE, render};
use super::tools::tools;
use super::{root, validate_config, without, yaml};

fn component_type(id: &str) -> &str {
    id.split('/').next().unwrap()
}

fn names(v: &Json) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("{v} is not a list"))
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

/// Every pipeline uses defined components, every defined component is used,
/// and memory_limiter comes first.
fn check_collector(file: &str) -> Json {
    let c = yaml(file);
    let pipelines = c["service"]["pipelines"].as_object().expect("pipelines");
    assert!(!pipelines.is_empty(), "{file}");
    let mut used: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (id, p) in pipelines {
        assert!(
            ["traces", "metrics", "logs"].contains(&component_type(id)),
            "{file}: pipeline {id}"
        );
        for section in ["receivers", "processors", "exporters"] {
            let list = names(&p[section]);
            if section != "processors" {
                assert!(!list.is_empty(), "{file}: {id}.{section}");
            }
            for name in list {
                assert!(
                    c[section].get(&name).is_some(),
                    "{file}: pipeline {id} uses {section} {name}, which is not defined"
                );
                used.entry(section).or_default().insert(name);
            }
        }
        assert_eq!(
            names(&p["processors"]).first().map(String::as_str),
            Some("memory_limiter"),
            "{file}: {id}"
        );
        assert!(
            names(&p["processors"]).contains(&"batch".to_owned()),
            "{file}: {id}"
        );
    }
    for section in ["receivers", "processors", "exporters"] {
        for defined in c[section].as_object().unwrap().keys() {
            assert!(
                used.get(section).is_some_and(|u| u.contains(defined)),
                "{file}: {section} {defined} is defined but unused"
            );
        }
    }
    c
}

/// Pipelines exporting to `exporter`.
fn pipelines_to<'a>(c: &'a Json, exporter: &str) -> Vec<(&'a String, &'a Json)> {
    c["service"]["pipelines"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, p)| names(&p["exporters"]).iter().any(|e| e == exporter))
        .collect()
}

/// The pipeline to toolscore drops toolscore's own spans (results, self
/// telemetry), which would come back as late spans of the traces they score.
fn check_results_stay_out(c: &Json, file: &str, exporter: &str) {
    let to_toolscore = pipelines_to(c, exporter);
    assert!(
        !to_toolscore.is_empty(),
        "{file}: nothing goes to {exporter}"
    );
    for (id, p) in to_toolscore {
        assert!(
            id.starts_with("traces"),
            "{file}: {id} sends {exporter} non-traces"
        );
        let filter = names(&p["processors"])
            .into_iter()
            .find(|n| component_type(n) == "filter")
            .unwrap_or_else(|| panic!("{file}: {id} has no filter processor"));
        let conditions = names(&c["processors"][&filter]["traces"]["span"]);
        assert!(
            conditions
                .iter()
                .any(|s| s.contains("resource.attributes[\"service.name\"] == \"toolscore\"")),
            "{file}: {filter} does not drop service.name toolscore: {conditions:?}"
        );
    }
}

#[test]
fn gateway_sends_agents_traces_to_toolscore_and_everything_to_the_backend() {
    let file = "deploy/collector/gateway.yaml";
    let c = check_collector(file);
    assert_eq!(
        c["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"],
        "0.0.0.0:4317"
    );
    assert_eq!(
        c["receivers"]["otlp"]["protocols"]["http"]["endpoint"],
        "0.0.0.0:4318"
    );
    let toolscore = c["exporters"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, e)| e["endpoint"] == "toolscore:4317")
        .map(|(id, _)| id.clone())
        .expect("an exporter to toolscore:4317");
    assert_eq!(component_type(&toolscore), "otlp_grpc");
    let jaeger = c["exporters"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, e)| e["endpoint"] == "jaeger:4317")
        .map(|(id, _)| id.clone())
        .expect("an exporter to jaeger:4317");
    check_results_stay_out(&c, file, &toolscore);
    // The backend gets every trace: a pipeline without the filter.
    let to_backend = pipelines_to(&c, &jaeger);
    assert!(to_backend.iter().any(|(id, p)| {
        id.starts_with("traces")
            && !names(&p["processors"])
                .iter()
                .any(|n| component_type(n) == "filter")
    }));
    // Result log events and metrics come back in too.
    for signal in ["logs", "metrics"] {
        let p = &c["service"]["pipelines"][signal];
        assert_eq!(names(&p["receivers"]), ["otlp"], "{signal}");
    }
    // Pointing at the port toolscore's container config binds.
    let config = Config::load(&root().join("config/container.yaml")).unwrap();
    assert_eq!(config.receivers.grpc.endpoint.port(), 4317);
}

#[test]
fn loadbalancing_routes_by_trace_id_to_the_charts_headless_service() {
    let file = "deploy/collector/loadbalancing.yaml";
    let c = check_collector(file);
    let (id, lb) = c["exporters"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(id, _)| component_type(id) == "loadbalancing")
        .expect("a loadbalancing exporter");
    assert_eq!(lb["routing_key"], "traceID");
    assert!(lb["protocol"]["otlp"].is_object());
    let dns = &lb["resolver"]["dns"];
    assert_eq!(dns["port"], 4317);
    // The name the chart gives the headless Service, in its namespace.
    let docs = render(&[]);
    let headless = docs
        .iter()
        .find(|d| d["kind"] == "Service" && d["spec"]["clusterIP"] == "None")
        .unwrap();
    assert_eq!(
        dns["hostname"],
        format!(
            "{}.{NAMESPACE}.svc.cluster.local",
            headless["metadata"]["name"].as_str().unwrap()
        )
    );
    assert!(
        headless["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["port"] == dns["port"])
    );
    check_results_stay_out(&c, file, id);
}

#[test]
fn compose_runs_the_collector_toolscore_and_jaeger() {
    let compose = yaml("deploy/collector/docker-compose.yaml");
    let services = compose["services"].as_object().unwrap();
    let mut service_names: Vec<&str> = services.keys().map(String::as_str).collect();
    service_names.sort();
    assert_eq!(service_names, ["jaeger", "otel-collector", "toolscore"]);
    let dir = root().join("deploy/collector");

    // Images pinned.
    for (name, s) in services {
        let image = s["image"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: image"));
        let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or("");
        assert!(!tag.is_empty() && tag != "latest", "{name}: {image}");
    }

    // The collector runs gateway.yaml, and toolscore is built from the Dockerfile.
    let collector = &services["otel-collector"];
    assert!(
        collector["image"]
            .as_str()
            .unwrap()
            .contains("opentelemetry-collector-contrib")
    );
    let config_arg = names(&collector["command"])
        .into_iter()
        .find_map(|a| a.strip_prefix("--config=").map(str::to_owned))
        .unwrap();
    let mounts = |s: &Json| -> Vec<(String, String)> {
        names(&s["volumes"])
            .iter()
            .map(|v| {
                let parts: Vec<&str> = v.split(':').collect();
                (parts[0].to_owned(), parts[1].to_owned())
            })
            .collect()
    };
    let mounted = mounts(collector);
    let gateway = mounted
        .iter()
        .find(|(_, target)| *target == config_arg)
        .unwrap();
    assert_eq!(gateway.0, "./gateway.yaml");
    let ports = names(&collector["ports"]);
    assert!(ports.contains(&"4317:4317".to_owned()) && ports.contains(&"4318:4318".to_owned()));

    let toolscore = &services["toolscore"];
    let context = dir.join(toolscore["build"]["context"].as_str().unwrap());
    let dockerfile = toolscore["build"]["dockerfile"].as_str().unwrap();
    assert!(context.join(dockerfile).exists());
    assert!(context.join("Cargo.toml").exists());
    let command = names(&toolscore["command"]);
    assert_eq!(command[..2], ["serve", "--config"]);
    let config = mounts(toolscore)
        .into_iter()
        .find(|(_, target)| *target == command[2])
        .expect("toolscore's config is mounted");
    let config_file = dir.join(&config.0);
    assert!(config_file.exists());
    let ports = names(&toolscore["ports"]);
    assert!(ports.contains(&"8080:8080".to_owned()) && ports.contains(&"8081:8081".to_owned()));

    // Host names: the gateway's exporters name compose services, and
    // toolscore exports to the collector.
    let gateway = yaml("deploy/collector/gateway.yaml");
    for e in gateway["exporters"].as_object().unwrap().values() {
        if let Some(endpoint) = e["endpoint"].as_str() {
            let host = endpoint.split(':').next().unwrap();
            assert!(
                services.contains_key(host),
                "{endpoint} is no compose service"
            );
        }
    }
    let toolscore_config = yaml("deploy/collector/toolscore.yaml");
    assert_eq!(
        toolscore_config["exporter"]["endpoint"],
        "http://otel-collector:4317"
    );
    assert_eq!(toolscore_config["exporter"]["enabled"], true);
    // The same listeners as the image's config.
    assert_eq!(
        without(toolscore_config.clone(), &["exporter", "telemetry"]),
        without(yaml("config/container.yaml"), &[]),
        "deploy/collector/toolscore.yaml is config/container.yaml plus exporter and telemetry"
    );
    validate_config(&config_file).unwrap();
    assert!(services["jaeger"]["ports"].to_string().contains("16686"));
}

/// The Compose file as Compose itself reads it: valid, and resolving to the
/// services, build and mounts the structural test above expects.
#[test]
fn docker_compose_config_accepts_the_compose_file() {
    let file = "deploy/collector/docker-compose.yaml";
    let out = tools().run("docker-compose", ["-f", file, "config", "--format", "json"]);
    assert!(out.ok, "{}", out.text());
    let resolved: Json = serde_json::from_str(&out.stdout).unwrap();
    let services = resolved["services"].as_object().unwrap();
    let build = &services["toolscore"]["build"];
    let context = std::path::Path::new(build["context"].as_str().unwrap());
    assert_eq!(context, root(), "the build context is the repository root");
    assert!(context.join(build["dockerfile"].as_str().unwrap()).exists());
    for (name, service) in services {
        for volume in service["volumes"].as_array().into_iter().flatten() {
            if volume["type"] == "bind" {
                let source = volume["source"].as_str().unwrap();
                assert!(
                    std::path::Path::new(source).exists(),
                    "{name} mounts {source}, which does not exist"
                );
            }
        }
    }
    // And Compose refuses what is not a Compose file.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("compose.yaml");
    std::fs::write(&bad, "services:\n  a:\n    image: x\n    ports: {a: b}\n").unwrap();
    let out = tools().run(
        "docker-compose",
        [
            "-f".as_ref(),
            bad.as_os_str(),
            "config".as_ref(),
            "--quiet".as_ref(),
        ],
    );
    assert!(!out.ok, "{}", out.text());
}
