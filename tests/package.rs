//! The Debian package (`cargo deb`, configured in Cargo.toml's `[package.metadata.deb]`): built
//! from the binary under test, its files, conffiles, dependencies and maintainer scripts; then,
//! extracted into a scratch root, the postinst steps (user, state directory) run against that
//! root, the installed binary validates the installed configuration as the unit runs it, and
//! `systemd-analyze verify` accepts the installed units.
//!
//! The package is built with `cargo deb --no-build` from the debug binary `cargo test` has just
//! built, not from a release build, which would add many minutes
//! (docs/decisions/debian-package.md). Without cargo-deb or dpkg-deb these tests say so and pass,
//! unless CRAWLGATE_REQUIRE_DEB=1, which CI (.ci/run) sets: then a missing tool fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

mod harness;
mod unit_files;

use harness::{get, wait_for, Origin, ProxyBuilder, FIREFOX, GPTBOT};

fn crate_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The package built once for every test of this file, and the root it is extracted into.
struct Package {
    deb: PathBuf,
    root: PathBuf,
    scratch: PathBuf,
}

fn required() -> bool {
    std::env::var_os("CRAWLGATE_REQUIRE_DEB").is_some_and(|v| v == "1")
}

/// Says why a test does not run, or fails it when CI requires it to run.
fn unavailable(what: &str, remedy: &str) {
    assert!(
        !required(),
        "{what}, and CRAWLGATE_REQUIRE_DEB=1 requires the package tests: {remedy}"
    );
    eprintln!("skipped: {what} ({remedy}); with CRAWLGATE_REQUIRE_DEB=1, as in CI, this fails");
}

fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn succeed(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout_of(command: &mut Command) -> String {
    String::from_utf8(succeed(command).stdout).unwrap()
}

fn package() -> Option<&'static Package> {
    static BUILT: OnceLock<Option<Package>> = OnceLock::new();
    BUILT.get_or_init(build).as_ref()
}

fn build() -> Option<Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    if !runs(&cargo, &["deb", "--version"]) {
        unavailable(
            "cargo-deb is not installed",
            "cargo install cargo-deb --locked",
        );
        return None;
    }
    if !runs("dpkg-deb", &["--version"]) {
        unavailable("dpkg-deb is not installed", "apt-get install dpkg");
        return None;
    }
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("package");
    let _ = std::fs::remove_dir_all(&scratch);
    // cargo-deb takes `target/release/crawlgate` (Cargo.toml's asset) from CARGO_TARGET_DIR's
    // release folder: here, a scratch one holding the binary under test.
    let release = scratch.join("target").join("release");
    std::fs::create_dir_all(&release).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_crawlgate"), release.join("crawlgate")).unwrap();
    let out = scratch.join("debian");
    succeed(
        Command::new(&cargo)
            .args(["deb", "--no-build", "--fast", "--manifest-path"])
            .arg(crate_path("Cargo.toml"))
            .arg("--output")
            .arg(&out)
            .env("CARGO_TARGET_DIR", scratch.join("target")),
    );
    let debs: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    assert_eq!(debs.len(), 1, "{debs:?}");
    let deb = debs[0].clone();
    let root = scratch.join("root");
    succeed(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root));
    Some(Package { deb, root, scratch })
}

/// Where each installed file comes from in the repository (`None`: written by cargo-deb).
fn expected_files() -> BTreeMap<String, Option<PathBuf>> {
    let mut files: BTreeMap<String, Option<PathBuf>> = [
        ("usr/bin/crawlgate", None),
        (
            "etc/crawlgate/crawlgate.yaml",
            Some("debian/crawlgate.yaml"),
        ),
        ("etc/default/crawlgate", Some("systemd/crawlgate.env")),
        (
            "usr/lib/systemd/system/crawlgate.service",
            Some("systemd/crawlgate.service"),
        ),
        (
            "usr/lib/systemd/system/crawlgate-ranges.service",
            Some("systemd/crawlgate-ranges.service"),
        ),
        (
            "usr/lib/systemd/system/crawlgate-ranges.timer",
            Some("systemd/crawlgate-ranges.timer"),
        ),
        (
            "usr/lib/sysusers.d/crawlgate.conf",
            Some("debian/crawlgate.sysusers"),
        ),
        (
            "usr/lib/tmpfiles.d/crawlgate.conf",
            Some("debian/crawlgate.tmpfile"),
        ),
        ("usr/share/crawlgate/bots.yaml", Some("conf/bots.yaml")),
        (
            "usr/share/crawlgate/examples/crawlgate.yaml",
            Some("conf/crawlgate.yaml"),
        ),
        (
            "usr/share/crawlgate/examples/robots.txt",
            Some("conf/robots.txt"),
        ),
        ("usr/share/doc/crawlgate/README.md", Some("README.md")),
        ("usr/share/doc/crawlgate/manual.md", Some("docs/manual.md")),
        ("usr/share/doc/crawlgate/copyright", None),
    ]
    .into_iter()
    .map(|(installed, source)| (installed.to_owned(), source.map(crate_path)))
    .collect();
    for (folder, installed) in [
        ("conf/catalog", "usr/share/crawlgate/catalog"),
        ("conf/prometheus", "usr/share/crawlgate/prometheus"),
        ("conf/grafana", "usr/share/crawlgate/grafana"),
        ("conf/ranges", "usr/share/crawlgate/examples/ranges"),
    ] {
        for entry in std::fs::read_dir(crate_path(folder)).unwrap() {
            let source = entry.unwrap().path();
            let name = source.file_name().unwrap().to_string_lossy().into_owned();
            files.insert(format!("{installed}/{name}"), Some(source));
        }
    }
    files
}

/// `dpkg-deb -c`: each regular file's path (without `./`), mode and owner.
fn listed_files(deb: &Path) -> BTreeMap<String, (String, String)> {
    let listing = stdout_of(Command::new("dpkg-deb").arg("-c").arg(deb));
    listing
        .lines()
        .filter(|line| line.starts_with('-'))
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let path = fields[5].trim_start_matches("./").to_owned();
            (path, (fields[0].to_owned(), fields[1].to_owned()))
        })
        .collect()
}

#[test]
fn the_package_installs_the_binary_units_configuration_and_shared_files() {
    let Some(package) = package() else {
        return;
    };
    let listed = listed_files(&package.deb);
    let expected = expected_files();
    let missing: Vec<&String> = expected
        .keys()
        .filter(|p| !listed.contains_key(*p))
        .collect();
    let extra: Vec<&String> = listed
        .keys()
        .filter(|p| !expected.contains_key(*p))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, unexpected {extra:?}"
    );
    for (path, (mode, owner)) in &listed {
        let wanted = if path == "usr/bin/crawlgate" {
            "-rwxr-xr-x"
        } else {
            "-rw-r--r--"
        };
        assert_eq!((mode.as_str(), owner.as_str()), (wanted, "0/0"), "{path}");
    }
    // What is installed is what the repository's tests check (deploy.rs: the unit, conf/).
    for (installed, source) in &expected {
        if let Some(source) = source {
            assert_eq!(
                std::fs::read(package.root.join(installed)).unwrap(),
                std::fs::read(source).unwrap(),
                "{installed} differs from {}",
                source.display()
            );
        }
    }
    let binary = package.root.join("usr/bin/crawlgate");
    let version = stdout_of(Command::new(&binary).arg("--version"));
    assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
    eprintln!(
        "{}: {} bytes, {} files:\n{}",
        package.deb.display(),
        std::fs::metadata(&package.deb).unwrap().len(),
        listed.len(),
        stdout_of(Command::new("dpkg-deb").arg("-c").arg(&package.deb))
    );
}

#[test]
fn the_control_file_names_the_conffiles_and_dependencies() {
    let Some(package) = package() else {
        return;
    };
    let field = |name: &str| {
        stdout_of(
            Command::new("dpkg-deb")
                .arg("-f")
                .arg(&package.deb)
                .arg(name),
        )
        .trim()
        .to_owned()
    };
    assert_eq!(field("Package"), "crawlgate");
    assert_eq!(field("Version"), format!("{}-1", env!("CARGO_PKG_VERSION")));
    let depends = field("Depends");
    assert!(depends.contains("libc6"), "{depends}");
    assert!(depends.contains("systemd (>= 239)"), "{depends}");
    let conffiles = stdout_of(
        Command::new("dpkg-deb")
            .arg("-I")
            .arg(&package.deb)
            .arg("conffiles"),
    );
    let conffiles: Vec<&str> = conffiles.lines().collect();
    assert_eq!(
        conffiles,
        ["/etc/crawlgate/crawlgate.yaml", "/etc/default/crawlgate"]
    );
}

/// The maintainer scripts, extracted (`dpkg-deb -e`).
fn control_scripts(package: &Package) -> PathBuf {
    let dir = package.scratch.join("control");
    if !dir.exists() {
        succeed(
            Command::new("dpkg-deb")
                .arg("-e")
                .arg(&package.deb)
                .arg(&dir),
        );
    }
    dir
}

#[test]
fn the_maintainer_scripts_make_the_user_and_state_directory_and_start_only_the_timer() {
    let Some(package) = package() else {
        return;
    };
    let control = control_scripts(package);
    for script in ["postinst", "prerm", "postrm"] {
        succeed(Command::new("sh").arg("-n").arg(control.join(script)));
    }
    let postinst = std::fs::read_to_string(control.join("postinst")).unwrap();
    // systemd-sysusers and systemd-tmpfiles look a bare name up in their .d folders: it must be
    // the installed file's.
    assert!(
        postinst.contains(r#"systemd-sysusers ${DPKG_ROOT:+--root="$DPKG_ROOT"} crawlgate.conf"#),
        "{postinst}"
    );
    assert!(
        postinst.contains("systemd-tmpfiles --create crawlgate.conf"),
        "{postinst}"
    );
    assert!(
        package
            .root
            .join("usr/lib/sysusers.d/crawlgate.conf")
            .is_file()
            && package
                .root
                .join("usr/lib/tmpfiles.d/crawlgate.conf")
                .is_file()
    );
    assert!(
        postinst.contains("deb-systemd-helper enable crawlgate-ranges.timer"),
        "{postinst}"
    );
    assert!(
        postinst.contains(
            "deb-systemd-invoke $_dh_action crawlgate-ranges.service crawlgate-ranges.timer"
        ),
        "{postinst}"
    );
    // The proxy waits for `systemctl enable --now crawlgate`: an upgrade only restarts it when it
    // runs, and only re-enables it when it was enabled.
    for line in postinst.lines().filter(|l| l.contains("crawlgate.service")) {
        let line = line.trim();
        assert!(
            !line.starts_with("deb-systemd-invoke") || line.contains("try-restart"),
            "{line}"
        );
    }
    assert!(postinst.contains("was-enabled crawlgate.service"));
    let postrm = std::fs::read_to_string(control.join("postrm")).unwrap();
    assert!(
        postrm.contains("rm -rf /var/lib/crawlgate /var/log/crawlgate"),
        "{postrm}"
    );
    assert!(!postrm.contains("#DEBHELPER#"), "{postrm}");
}

/// `crawlgate validate` on the installed configuration, as ExecStartPre runs it: the installed
/// binary, with STATE_DIRECTORY set as StateDirectory=crawlgate sets it.
fn validate_installed(package: &Package, state: &Path, user: Option<(u32, u32)>) -> Command {
    let binary = package.root.join("usr/bin/crawlgate");
    let config = package.root.join("etc/crawlgate/crawlgate.yaml");
    let mut command = match user {
        Some((uid, gid)) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--clear-groups")
                .arg(&binary);
            c
        }
        None => Command::new(&binary),
    };
    command
        .args(["validate", "--config"])
        .arg(&config)
        .env("STATE_DIRECTORY", state);
    command
}

#[test]
fn the_installed_configuration_validates_with_the_installed_binary() {
    let Some(package) = package() else {
        return;
    };
    let state = package.scratch.join("state-for-validate");
    std::fs::create_dir_all(&state).unwrap();
    let stdout = stdout_of(&mut validate_installed(package, &state, None));
    assert!(stdout.contains("crawlgate.yaml: ok"), "{stdout}");
    // One site, its robots.txt from the origin kept in the unit's state directory, and counted.
    assert!(
        stdout.contains("site www: upstream 127.0.0.1:8000, robots.txt fetched from the origin"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("kept in {}", state.join("robots").display())),
        "{stdout}"
    );
    assert!(stdout.contains("action count"), "{stdout}");
    // The range files are in the state directory both units share, where crawlgate-ranges.service
    // may write them (/etc/crawlgate is read-only to it).
    let ranges: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("ranges "))
        .collect();
    assert_eq!(ranges.len(), 3, "{stdout}");
    for line in ranges {
        assert!(line.contains(" /var/lib/crawlgate/ranges/"), "{line}");
    }
    let ranges_unit = std::fs::read_to_string(
        package
            .root
            .join("usr/lib/systemd/system/crawlgate-ranges.service"),
    )
    .unwrap();
    assert!(ranges_unit.contains("\nStateDirectory=crawlgate\n"));
}

fn is_root() -> bool {
    stdout_of(Command::new("id").arg("-u")).trim() == "0"
}

/// The user and group systemd-sysusers wrote into `root`'s /etc/passwd.
fn passwd_entry(root: &Path, name: &str) -> (u32, u32, String) {
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
    let fields: Vec<String> = passwd
        .lines()
        .map(|l| l.split(':').map(str::to_owned).collect::<Vec<_>>())
        .find(|f| f[0] == name)
        .unwrap_or_else(|| panic!("no {name} in {passwd}"));
    (
        fields[2].parse().unwrap(),
        fields[3].parse().unwrap(),
        fields[6].clone(),
    )
}

/// What postinst does on `configure` (systemd-sysusers with DPKG_ROOT, systemd-tmpfiles), run
/// against the scratch root; then `validate` as the user it made, in the folder it made.
#[test]
fn the_postinst_steps_make_a_user_who_can_write_the_state_directory() {
    let Some(package) = package() else {
        return;
    };
    if !is_root() {
        unavailable(
            "not root: systemd-tmpfiles cannot give the state directory to its user",
            "run as root",
        );
        return;
    }
    let root = &package.root;
    succeed(
        Command::new("systemd-sysusers")
            .arg(format!("--root={}", root.display()))
            .arg("crawlgate.conf"),
    );
    let (uid, gid, shell) = passwd_entry(root, "crawlgate");
    assert_eq!(shell, "/usr/sbin/nologin");
    assert!(uid > 0 && uid < 1000, "a system user: {uid}");
    succeed(
        Command::new("systemd-tmpfiles")
            .arg(format!("--root={}", root.display()))
            .args(["--create", "crawlgate.conf"]),
    );
    let state = root.join("var/lib/crawlgate");
    let meta = std::fs::metadata(&state).unwrap();
    assert!(meta.is_dir());
    assert_eq!((meta.uid(), meta.gid()), (uid, gid));
    assert_eq!(meta.permissions().mode() & 0o7777, 0o755);

    succeed(&mut validate_installed(package, &state, Some((uid, gid))));
    // And the same user is refused a folder it cannot write: the check above could fail.
    let foreign = package.scratch.join("state-of-root");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = validate_installed(package, &foreign, Some((uid, gid)))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot create files in"), "{stderr}");
}

/// Copies the installed units into `into`, running `binary` (see `unit_files::running`).
fn units_running(units: &Path, binary: &Path, into: &Path) -> Vec<String> {
    std::fs::create_dir_all(into).unwrap();
    let mut names = Vec::new();
    for entry in std::fs::read_dir(units).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        // Every service runs the package's binary by its bare name (the timer runs a service).
        assert_eq!(
            unit_files::runs_bare_name(&text),
            name.ends_with(".service"),
            "{name}:\n{text}"
        );
        std::fs::write(into.join(&name), unit_files::running(&text, binary)).unwrap();
        names.push(name);
    }
    names.sort();
    names
}

fn systemd_analyze() -> bool {
    if runs("systemd-analyze", &["--version"]) {
        true
    } else {
        unavailable(
            "systemd-analyze is not installed",
            "apt-get install systemd",
        );
        false
    }
}

#[test]
fn the_installed_units_verify() {
    let Some(package) = package() else {
        return;
    };
    if !systemd_analyze() {
        return;
    }
    let dir = package.scratch.join("units");
    let names = units_running(
        &package.root.join("usr/lib/systemd/system"),
        &package.root.join("usr/bin/crawlgate"),
        &dir,
    );
    assert_eq!(
        names,
        [
            "crawlgate-ranges.service",
            "crawlgate-ranges.timer",
            "crawlgate.service"
        ]
    );
    for name in &names {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(!unit_files::runs_bare_name(&text), "{name}:\n{text}");
    }
    let output = succeed(
        Command::new("systemd-analyze")
            .arg("verify")
            .args(&names)
            .current_dir(&dir),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    for name in &names {
        assert!(
            !stderr.contains(&format!("{name}:")),
            "warnings about {name}: {stderr}"
        );
    }
    // The ranges job is hardened like the proxy (crawlgate.service is the repository's unit,
    // rated by tests/deploy.rs).
    let (score, report) = unit_files::exposure(&dir, Path::new("crawlgate-ranges.service"));
    assert!(score <= 2.0, "exposure {score}:\n{report}");
}

/// The timer runs the ranges update daily, as the proxy's static user (whose files the state
/// directory holds).
#[test]
fn the_timer_runs_the_ranges_update_daily() {
    let Some(package) = package() else {
        return;
    };
    let units = package.root.join("usr/lib/systemd/system");
    let timer = std::fs::read_to_string(units.join("crawlgate-ranges.timer")).unwrap();
    assert!(timer.lines().any(|l| l == "OnCalendar=daily"), "{timer}");
    assert!(
        timer.lines().any(|l| l == "WantedBy=timers.target"),
        "{timer}"
    );
    let service = std::fs::read_to_string(units.join("crawlgate-ranges.service")).unwrap();
    assert!(
        service
            .lines()
            .any(|l| l == "ExecStart=crawlgate ranges update --config ${CRAWLGATE_CONFIG}"),
        "{service}"
    );
    assert!(service.lines().any(|l| l == "User=crawlgate"));
    let proxy = std::fs::read_to_string(units.join("crawlgate.service")).unwrap();
    assert!(proxy.lines().any(|l| l == "User=crawlgate"));
    assert!(!proxy.lines().any(|l| l == "DynamicUser=yes"));
}

/// The starter configuration serves as installed, with only its three addresses moved to free
/// ports: robots.txt is fetched from the origin, a crawler it disallows reaches the origin all
/// the same, and is counted. (The binary under test: the package holds it, stripped.)
#[test]
fn the_starter_configuration_serves_and_counts() {
    let starter = std::fs::read_to_string(crate_path("debian/crawlgate.yaml")).unwrap();
    let origin = Origin::start();
    origin.set_robots(
        200,
        "User-agent: GPTBot\nDisallow: /private/\n",
        std::time::Duration::ZERO,
    );
    for address in [
        "\"127.0.0.1:8080\"",
        "\"127.0.0.1:9464\"",
        "\"127.0.0.1:8000\"",
    ] {
        assert_eq!(starter.matches(address).count(), 1, "{address}");
    }
    let template = starter
        .replace("\"127.0.0.1:8080\"", "\"{listen}\"")
        .replace("\"127.0.0.1:9464\"", "\"{metrics}\"")
        .replace("\"127.0.0.1:8000\"", &format!("\"{}\"", origin.addr));
    let proxy = ProxyBuilder::new(&template).start();
    let counted = r#"crawlgate_requests_total{action="counted",bot="GPTBot",category="ai-training",site="www",verdict="disallowed",verified="unverifiable"}"#;
    // Until the origin's robots.txt is in, a request is judged by the stand-in; then counted.
    wait_for("GPTBot counted as disallowed", || {
        let (status, body, headers) = get(&proxy.url("/private/report"), GPTBOT, None);
        assert_eq!(status, 200, "{body}");
        assert!(headers
            .keys()
            .all(|k| !k.as_str().starts_with("x-crawlgate")));
        proxy.metric(counted)
    });
    // The stand-in counts it too, so the request may be counted before the first fetch lands.
    wait_for("the origin's robots.txt fetched", || {
        origin.last("/robots.txt")
    });
    let gptbot = origin.last("/private/report").unwrap();
    assert!(
        gptbot
            .headers
            .keys()
            .all(|k| !k.as_str().starts_with("x-crawlgate")),
        "count sends no verdict headers: {:?}",
        gptbot.headers
    );
    let (status, _, _) = get(&proxy.url("/private/report"), FIREFOX, None);
    assert_eq!(status, 200);
}
