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

/// The pipelines to toolscore, one for traces and one for logs (the GenAI
/// events), drop toolscore's own spans and log events (results, self
/// telemetry), which would come back as late records of the traces they
/// score.
fn check_results_stay_out(c: &Json, file: &str, exporter: &str) {
    let to_toolscore = pipelines_to(c, exporter);
    let signals: BTreeSet<&str> = to_toolscore
        .iter()
        .map(|(id, _)| id.split('/').next().unwrap_or_default())
        .collect();
    assert_eq!(
        signals,
        BTreeSet::from(["logs", "traces"]),
        "{file}: traces and logs go to {exporter}, nothing else"
    );
    for (id, p) in to_toolscore {
        let filter = names(&p["processors"])
            .into_iter()
            .find(|n| component_type(n) == "filter")
            .unwrap_or_else(|| panic!("{file}: {id} has no filter processor"));
        let conditions = if id.starts_with("traces") {
            names(&c["processors"][&filter]["traces"]["span"])
        } else {
            names(&c["processors"][&filter]["logs"]["log_record"])
        };
        assert!(
            conditions
                .iter()
                .any(|s| s.contains("resource.attributes[\"service.name\"] == \"toolscore\"")),
            "{file}: {filter} does not drop service.name toolscore in {id}: {conditions:?}"
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

const COMPOSE: &str = "deploy/collector/docker-compose.yaml";

/// The Compose file as `docker-compose config --format json` resolves it
/// with `profiles` enabled: anchors and merge keys applied, paths absolute,
/// only the services those profiles (and none) run.
fn compose_config(profiles: &[&str]) -> Json {
    let mut args = vec!["-f", COMPOSE];
    for p in profiles {
        args.extend(["--profile", p]);
    }
    args.extend(["config", "--format", "json"]);
    let out = tools().run("docker-compose", args);
    assert!(out.ok, "docker-compose config {profiles:?}: {}", out.text());
    serde_json::from_str(&out.stdout).unwrap()
}

fn service_names(resolved: &Json) -> BTreeSet<&str> {
    resolved["services"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

/// The default `docker compose up`: the collector, one toolscore on SQLite,
/// Jaeger (the `replicas` profile's services stay out).
#[test]
fn compose_runs_the_collector_toolscore_and_jaeger() {
    let compose = yaml(COMPOSE);
    let default = compose_config(&[]);
    assert_eq!(
        service_names(&default),
        BTreeSet::from(["jaeger", "otel-collector", "toolscore"])
    );
    assert!(default.get("secrets").is_none(), "{default}");
    let mut services = compose["services"].as_object().unwrap().clone();
    services.retain(|name, _| default["services"].get(name).is_some());
    let services = &services;
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

/// The Compose file as Compose itself reads it, with and without the
/// `replicas` profile: valid, and resolving to the services, builds and
/// mounts the structural tests expect.
#[test]
fn docker_compose_config_accepts_the_compose_file() {
    for profiles in [&[][..], &["replicas"][..]] {
        let resolved = compose_config(profiles);
        let services = resolved["services"].as_object().unwrap();
        for (name, service) in services {
            let build = &service["build"];
            if build.is_null() {
                continue;
            }
            let context = std::path::Path::new(build["context"].as_str().unwrap());
            assert_eq!(
                context,
                root(),
                "{name}: the build context is the repository root"
            );
            assert!(context.join(build["dockerfile"].as_str().unwrap()).exists());
        }
        assert!(services["toolscore"]["build"].is_object());
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

/// The `replicas` profile: two toolscore replicas on one PostgreSQL 15
/// (healthchecked, its data on a named volume, the password a Compose secret
/// both read from a file), a collector routing each trace ID to one replica;
/// the default services unchanged beside them, no host port published twice.
#[test]
fn compose_replicas_profile_runs_two_toolscore_replicas_on_one_postgres() {
    let default = compose_config(&[]);
    let resolved = compose_config(&["replicas"]);
    let services = resolved["services"].as_object().unwrap();
    let added: BTreeSet<&str> = service_names(&resolved)
        .difference(&service_names(&default))
        .copied()
        .collect();
    assert_eq!(
        added,
        BTreeSet::from([
            "otel-collector-replicas",
            "postgres",
            "toolscore-a",
            "toolscore-b"
        ])
    );
    for name in &added {
        assert_eq!(
            services[*name]["profiles"],
            serde_json::json!(["replicas"]),
            "{name}"
        );
    }
    for name in service_names(&default) {
        assert_eq!(
            services[name], default["services"][name],
            "{name} changed with the profile"
        );
    }

    // Every host port once: `--profile replicas up` runs both set-ups.
    let mut published = BTreeSet::new();
    for (name, s) in services {
        for p in s["ports"].as_array().into_iter().flatten() {
            let port = p["published"].as_str().unwrap().to_owned();
            assert!(
                published.insert(port.clone()),
                "{name} publishes {port} again"
            );
        }
        let image = s["image"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: image"));
        let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or("");
        assert!(!tag.is_empty() && tag != "latest", "{name}: {image}");
    }

    // PostgreSQL: the password from the secret's file, the data on a named
    // volume, ready only when it accepts connections.
    let pg = &services["postgres"];
    assert_eq!(pg["image"], "postgres:15");
    let secret = &resolved["secrets"]["postgres-password"];
    let secret_file = std::path::Path::new(secret["file"].as_str().unwrap());
    assert_eq!(
        secret_file,
        root().join("deploy/collector/postgres-password.txt")
    );
    let gitignore = std::fs::read_to_string(root().join("deploy/collector/.gitignore")).unwrap();
    assert!(
        gitignore.lines().any(|l| l == "postgres-password.txt"),
        "{gitignore}"
    );
    let secret_target = |s: &Json| -> String {
        let mounted = s["secrets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["source"] == "postgres-password")
            .expect("the postgres-password secret");
        mounted["target"].as_str().unwrap().to_owned()
    };
    let env = &pg["environment"];
    assert_eq!(env["POSTGRES_PASSWORD_FILE"], secret_target(pg).as_str());
    assert!(
        env.get("POSTGRES_PASSWORD").is_none(),
        "the password in the environment"
    );
    let data = pg["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["target"] == "/var/lib/postgresql/data")
        .expect("PostgreSQL's data directory on a volume");
    assert_eq!(data["type"], "volume");
    assert!(resolved["volumes"][data["source"].as_str().unwrap()].is_object());
    let check = names(&pg["healthcheck"]["test"]);
    assert_eq!(check[0], "CMD");
    assert_eq!(check[1], "pg_isready");
    assert!(check.contains(&"--host=127.0.0.1".to_owned()), "{check:?}");

    // The replicas: toolscore's image, the postgres config, the secret where
    // the config reads it, started once the database is healthy.
    let url = regex::Regex::new(r"^postgres://([^@:/]+)@([^:/]+):(\d+)/([^?/]+)$").unwrap();
    let collector = "otel-collector-replicas";
    for name in ["toolscore-a", "toolscore-b"] {
        let s = &services[name];
        assert_eq!(s["image"], services["toolscore"]["image"], "{name}");
        assert_eq!(s["build"], services["toolscore"]["build"], "{name}");
        assert_eq!(
            s["depends_on"]["postgres"]["condition"], "service_healthy",
            "{name}"
        );
        let command = names(&s["command"]);
        assert_eq!(command[..2], ["serve", "--config"]);
        let mount = s["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["target"] == command[2].as_str())
            .unwrap_or_else(|| panic!("{name}: its config is not mounted"));
        assert_eq!(mount["type"], "bind");
        let file = std::path::Path::new(mount["source"].as_str().unwrap());
        assert_eq!(
            file,
            root().join("deploy/collector/toolscore-postgres.yaml")
        );
        validate_config(file).unwrap_or_else(|e| panic!("{name}: {e}"));
        let config = Config::load(file).unwrap();
        assert_eq!(
            config.store.backend,
            toolscore::config::StoreBackend::Postgres
        );
        assert_eq!(
            config.store.postgres.password_file.as_deref(),
            Some(std::path::Path::new(&secret_target(s)))
        );
        let m = url
            .captures(&config.store.postgres.url)
            .unwrap_or_else(|| panic!("{}", config.store.postgres.url));
        assert_eq!(&m[1], env["POSTGRES_USER"].as_str().unwrap());
        assert_eq!(&m[2], "postgres", "the compose service");
        assert_eq!(&m[3], "5432");
        assert_eq!(&m[4], env["POSTGRES_DB"].as_str().unwrap());
        assert!(!config.store.postgres.url.contains("sslmode"));
        assert_eq!(
            config.exporter.endpoint,
            format!("http://{collector}:4317"),
            "{name} exports to its own collector"
        );
        assert!(config.exporter.enabled);
        assert_eq!(config.receivers.grpc.endpoint.port(), 4317);
    }
    // toolscore.yaml but for the store and where results are exported.
    assert_eq!(
        without(
            yaml("deploy/collector/toolscore-postgres.yaml"),
            &["store", "exporter.endpoint"]
        ),
        without(
            yaml("deploy/collector/toolscore.yaml"),
            &["store", "exporter.endpoint"]
        ),
    );

    // The collector: gateway-replicas.yaml, routing by trace ID to both
    // replicas' OTLP/gRPC ports, the backend a compose service too.
    let c = &services[collector];
    let config_arg = names(&c["command"])
        .into_iter()
        .find_map(|a| a.strip_prefix("--config=").map(str::to_owned))
        .unwrap();
    let mounted = c["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["target"] == config_arg.as_str())
        .unwrap();
    let file = "deploy/collector/gateway-replicas.yaml";
    assert_eq!(mounted["source"], root().join(file).to_str().unwrap());
    let gateway = check_collector(file);
    let (id, lb) = gateway["exporters"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(id, _)| component_type(id) == "loadbalancing")
        .expect("a loadbalancing exporter");
    assert_eq!(lb["routing_key"], "traceID");
    assert!(lb["protocol"]["otlp"].is_object());
    assert_eq!(
        names(&lb["resolver"]["static"]["hostnames"]),
        ["toolscore-a:4317", "toolscore-b:4317"]
    );
    for name in ["toolscore-a", "toolscore-b"] {
        assert!(
            c["depends_on"].get(name).is_some(),
            "{collector} does not wait for {name}"
        );
    }
    check_results_stay_out(&gateway, file, id);
    for e in gateway["exporters"].as_object().unwrap().values() {
        if let Some(endpoint) = e["endpoint"].as_str() {
            let host = endpoint.split(':').next().unwrap();
            assert!(
                services.contains_key(host),
                "{endpoint} is no compose service"
            );
        }
    }
}

const COMPOSE_TLS: &str = "deploy/collector/docker-compose.tls.yaml";

/// docker-compose.tls.yaml over the default services: toolscore runs
/// toolscore-tls.yaml (toolscore.yaml with TLS and tokens on every
/// listener) with the certificate, key and token files as Compose secrets
/// where that config names them; the collector runs gateway-tls.yaml
/// (gateway.yaml, its exporter to toolscore checking the CA and sending the
/// ingest token) with the CA and the same token file where it names them.
/// The files are git-ignored; toolscore loads the config with such files.
#[test]
fn compose_tls_override_gives_toolscore_and_the_collector_their_files() {
    let out = tools().run(
        "docker-compose",
        [
            "-f",
            COMPOSE,
            "-f",
            COMPOSE_TLS,
            "config",
            "--format",
            "json",
        ],
    );
    assert!(out.ok, "{}", out.text());
    let resolved: Json = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        service_names(&resolved),
        BTreeSet::from(["jaeger", "otel-collector", "toolscore"])
    );
    let secrets = &resolved["secrets"];
    // name → (the file on the host, relative to deploy/collector)
    let source = |name: &str| -> String {
        let file = secrets[name]["file"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}"));
        file.strip_prefix(&format!("{}/", root().join("deploy/collector").display()))
            .unwrap()
            .to_owned()
    };
    // (service, target in the container) → secret
    let mounted = |service: &str| -> BTreeMap<String, String> {
        resolved["services"][service]["secrets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["target"].as_str().unwrap().to_owned(),
                    s["source"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let gitignore = std::fs::read_to_string(root().join("deploy/collector/.gitignore")).unwrap();
    for name in secrets.as_object().unwrap().keys() {
        let file = source(name);
        let dir = format!("{}/", file.split('/').next().unwrap());
        assert!(
            gitignore.lines().any(|l| l == dir),
            "{file} is not git-ignored"
        );
    }

    // toolscore: its config replaced at the same path, the secrets where it
    // reads them.
    let toolscore = &resolved["services"]["toolscore"];
    let command = names(&toolscore["command"]);
    let config_mount = toolscore["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["target"] == command[2].as_str())
        .unwrap();
    let config_path = root().join("deploy/collector/toolscore-tls.yaml");
    assert_eq!(config_mount["source"], config_path.to_str().unwrap());
    let config = yaml("deploy/collector/toolscore-tls.yaml");
    let in_toolscore = mounted("toolscore");
    let mut files = Vec::new();
    for (a, b) in [
        ("receivers", "grpc"),
        ("receivers", "http"),
        ("api", "http"),
        ("api", "grpc"),
    ] {
        let l = &config[a][b];
        assert_eq!(l["auth"]["enabled"], true, "{a}.{b}");
        files.push(l["tls"]["cert_file"].as_str().unwrap().to_owned());
        files.push(l["tls"]["key_file"].as_str().unwrap().to_owned());
    }
    let mut scopes = BTreeMap::new();
    for token in config["auth"]["tokens"].as_array().unwrap() {
        let file = token["file"].as_str().unwrap().to_owned();
        scopes.insert(file.clone(), token["scopes"].clone());
        files.push(file);
    }
    for file in &files {
        assert!(
            in_toolscore.contains_key(file),
            "{file} is not mounted: {in_toolscore:?}"
        );
    }
    assert_eq!(
        source(&in_toolscore["/etc/toolscore/tls/tls.crt"]),
        "tls/toolscore.crt"
    );
    assert_eq!(
        source(&in_toolscore["/etc/toolscore/tls/tls.key"]),
        "tls/toolscore.key"
    );
    let ingest_file = scopes
        .iter()
        .find(|(_, s)| **s == serde_json::json!(["ingest"]))
        .map(|(f, _)| f.clone())
        .expect("a token file with the ingest scope");
    // toolscore.yaml, but for the listeners' tls and auth and the tokens.
    let mut keys = vec!["auth".to_owned()];
    for l in ["receivers.grpc", "receivers.http", "api.http", "api.grpc"] {
        keys.push(format!("{l}.tls"));
        keys.push(format!("{l}.auth"));
    }
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    assert_eq!(
        without(config.clone(), &keys),
        without(yaml("deploy/collector/toolscore.yaml"), &[]),
    );

    // The collector: gateway-tls.yaml at the same path; its exporter to
    // toolscore verifies with the CA that signs toolscore's certificate and
    // sends the token toolscore accepts for ingest.
    let collector = &resolved["services"]["otel-collector"];
    let config_arg = names(&collector["command"])
        .into_iter()
        .find_map(|a| a.strip_prefix("--config=").map(str::to_owned))
        .unwrap();
    let mount = collector["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["target"] == config_arg.as_str())
        .unwrap();
    let file = "deploy/collector/gateway-tls.yaml";
    assert_eq!(mount["source"], root().join(file).to_str().unwrap());
    let gateway = check_collector(file);
    let in_collector = mounted("otel-collector");
    let exporter = &gateway["exporters"]["otlp_grpc/toolscore"];
    assert_eq!(exporter["endpoint"], "toolscore:4317");
    assert!(exporter["tls"].get("insecure").is_none());
    assert_eq!(
        source(&in_collector[exporter["tls"]["ca_file"].as_str().unwrap()]),
        "tls/ca.crt"
    );
    let authenticator = exporter["auth"]["authenticator"].as_str().unwrap();
    assert!(names(&gateway["service"]["extensions"]).contains(&authenticator.to_owned()));
    let token_file = gateway["extensions"][authenticator]["filename"]
        .as_str()
        .unwrap();
    assert_eq!(
        in_collector[token_file], in_toolscore[&ingest_file],
        "the same token file"
    );
    check_results_stay_out(&gateway, file, "otlp_grpc/toolscore");
    // gateway.yaml, but for the exporter's tls and auth and the extension.
    let strip = |c: Json| {
        without(
            c,
            &[
                "exporters.otlp_grpc/toolscore.tls",
                "exporters.otlp_grpc/toolscore.auth",
                "extensions",
                "service.extensions",
            ],
        )
    };
    assert_eq!(
        strip(gateway.clone()),
        strip(yaml("deploy/collector/gateway.yaml"))
    );

    // toolscore loads it, reading such files where the config names them
    // (validate-config loads certificates and tokens).
    let dir = tempfile::tempdir().unwrap();
    let fixtures = super::chart::secret_fixtures();
    let tls = &fixtures["toolscore-tls"];
    let tokens = &fixtures["toolscore-tokens"];
    for file in &files {
        let content = match file.rsplit('/').next().unwrap() {
            "tls.crt" => &tls["tls.crt"],
            "tls.key" => &tls["tls.key"],
            "ingest" => &tokens["ingest"],
            _ => &tokens["read"],
        };
        let path = dir
            .path()
            .join(file.strip_prefix("/etc/toolscore/").unwrap());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let text = std::fs::read_to_string(&config_path)
        .unwrap()
        .replace("/etc/toolscore/", &format!("{}/", dir.path().display()));
    let laid_out = dir.path().join("compose.yaml");
    std::fs::write(&laid_out, text).unwrap();
    validate_config(&laid_out).unwrap();
}
