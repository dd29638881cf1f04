//! Which cloud providers count as usable without an API key, side by side with pi 1.6:
//! `--list-models` under the same environment (AWS keys and profiles, Google application
//! default credentials, none) prints the same rows from pi and from tern. Azure OpenAI with
//! Microsoft Entra ID (a client secret, certificate or federated token, or a managed identity
//! the environment announces) is tern's own addition, checked against tern alone.

mod common;

use std::path::Path;
use std::process::Command;

use common::{command, run, stderr, stdout};

/// An environment compared: what it is, its variables, and the models searched for.
type Case = (&'static str, Vars, &'static str);
type Vars = Vec<(&'static str, String)>;

/// The environments compared.
fn cases(home: &Path) -> Vec<Case> {
    let adc = home.join("adc.json");
    std::fs::write(
        &adc,
        r#"{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r"}"#,
    )
    .expect("write the ADC file");
    let adc = adc.display().to_string();
    let s = |v: &str| v.to_string();
    vec![
        ("nothing set", vec![], "nova-lite"),
        (
            "an AWS profile",
            vec![("AWS_PROFILE", s("dev"))],
            "nova-lite",
        ),
        (
            "AWS access keys",
            vec![
                ("AWS_ACCESS_KEY_ID", s("AKIDEXAMPLE")),
                ("AWS_SECRET_ACCESS_KEY", s("secret")),
            ],
            "nova-lite",
        ),
        (
            "an access key without its secret",
            vec![("AWS_ACCESS_KEY_ID", s("AKIDEXAMPLE"))],
            "nova-lite",
        ),
        (
            "a web identity token file",
            vec![("AWS_WEB_IDENTITY_TOKEN_FILE", s("/nonexistent/token"))],
            "nova-lite",
        ),
        (
            "Google ADC, project and location",
            vec![
                ("GOOGLE_APPLICATION_CREDENTIALS", adc.clone()),
                ("GOOGLE_CLOUD_PROJECT", s("p")),
                ("GOOGLE_CLOUD_LOCATION", s("us-central1")),
            ],
            "gemini-2.5-flash-lite",
        ),
        (
            "Google ADC without a location",
            vec![
                ("GOOGLE_APPLICATION_CREDENTIALS", adc),
                ("GOOGLE_CLOUD_PROJECT", s("p")),
            ],
            "gemini-2.5-flash-lite",
        ),
        (
            "a Google ADC file that does not exist",
            vec![
                ("GOOGLE_APPLICATION_CREDENTIALS", s("/nonexistent/adc.json")),
                ("GOOGLE_CLOUD_PROJECT", s("p")),
                ("GOOGLE_CLOUD_LOCATION", s("us-central1")),
            ],
            "gemini-2.5-flash-lite",
        ),
    ]
}

#[test]
fn cloud_credentials_make_the_same_models_usable_as_in_pi() {
    let (node, cli) = match common::pi::install() {
        Ok(found) => found,
        Err(why) => {
            eprintln!("pi is not installed, nothing compared: {why}");
            return;
        }
    };
    let home = tempfile::tempdir().expect("home");
    let mut listed = 0;
    for (what, vars, search) in cases(home.path()) {
        let mut pi = Command::new(&node);
        pi.arg(&cli)
            .args(["--list-models", search])
            .current_dir(home.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .envs(vars.iter().map(|(k, v)| (k, v)));
        let pi = run(pi);
        assert_eq!(pi.status.code(), Some(0), "pi ({what}): {}", stderr(&pi));
        let mut tern = command(home.path(), home.path());
        tern.args(["--list-models", search])
            .envs(vars.iter().map(|(k, v)| (k, v)));
        let tern = run(tern);
        assert_eq!(
            tern.status.code(),
            Some(0),
            "tern ({what}): {}",
            stderr(&tern)
        );
        // With nothing usable each prints its own advice; otherwise the same table.
        let none = "No models available";
        if stdout(&pi).starts_with(none) {
            assert!(stdout(&tern).starts_with(none), "{what}: {}", stdout(&tern));
        } else {
            assert_eq!(stdout(&tern), stdout(&pi), "{what}");
            listed += 1;
        }
    }
    assert!(listed >= 4, "the credentials that count list models");
}

#[test]
fn an_entra_id_client_secret_makes_azure_usable() {
    let home = tempfile::tempdir().expect("home");
    let list = |vars: &[(&str, &str)]| {
        let mut c = command(home.path(), home.path());
        c.args(["--list-models", "gpt-4.1-mini"])
            .envs(vars.iter().copied());
        stdout(&run(c))
    };
    let azure = |out: &str| out.lines().any(|l| l.starts_with("azure "));
    let tenant = [("AZURE_TENANT_ID", "t"), ("AZURE_CLIENT_ID", "c")];
    assert!(
        !azure(&list(&tenant)),
        "a tenant and client alone are no credentials"
    );
    let secret = [tenant[0], tenant[1], ("AZURE_CLIENT_SECRET", "s")];
    assert!(azure(&list(&secret)), "{}", list(&secret));
    let federated = [tenant[0], tenant[1], ("AZURE_FEDERATED_TOKEN_FILE", "/t")];
    assert!(azure(&list(&federated)));
    let certificate = [
        tenant[0],
        tenant[1],
        ("AZURE_CLIENT_CERTIFICATE_PATH", "/c.pem"),
    ];
    assert!(azure(&list(&certificate)));
    // Managed identity the environment announces; IMDS and the CLI only a request finds.
    let app_service = [
        ("IDENTITY_ENDPOINT", "http://127.0.0.1:1/msi/token"),
        ("IDENTITY_HEADER", "h"),
    ];
    assert!(azure(&list(&app_service)));
    assert!(!azure(&list(&[(
        "IDENTITY_ENDPOINT",
        "http://127.0.0.1:1/msi/token"
    )])));
    assert!(azure(&list(&[("MSI_ENDPOINT", "http://127.0.0.1:1/msi")])));
}
