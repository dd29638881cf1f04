//! Programs that run another program given in their arguments (`env rm`, `sudo -u x rm`,
//! `timeout 5 rm`, `xargs rm`), and where that program starts.

/// What a wrapper does with its arguments.
pub(crate) enum Wrapped {
    /// The program and its arguments start at this index.
    Command(usize),
    /// A string the wrapper hands to a shell (`su -c STR`, `watch ARGS`, `env -S STR`).
    Script(String),
    /// The wrapper was given no program to run.
    Nothing,
}

/// A wrapper's options that take a value, and how many operands come before the program.
struct Spec {
    value_options: &'static [&'static str],
    operands: usize,
    /// `NAME=value` words before the program (env, sudo) are settings, not the program.
    assignments: bool,
    /// An option whose value is a shell script (`su -c`, `flock -c`, `script -c`).
    script_option: Option<&'static str>,
}

const fn spec(value_options: &'static [&'static str], operands: usize) -> Spec {
    Spec {
        value_options,
        operands,
        assignments: false,
        script_option: None,
    }
}

fn lookup(program: &str) -> Option<Spec> {
    Some(match program {
        "command" | "builtin" | "nohup" | "setsid" | "unbuffer" | "caffeinate" | "catchsegv"
        | "busybox" | "coproc" | "proxychains" | "proxychains4" | "torsocks" | "xvfb-run"
        | "then" | "do" | "else" | "!" => spec(&[], 0),
        "exec" => spec(&["-a"], 0),
        "time" => spec(&["-f", "-o", "--format", "--output"], 0),
        "nice" => spec(&["-n", "--adjustment"], 0),
        "ionice" => spec(&["-c", "-n", "--class", "--classdata"], 0),
        "stdbuf" => spec(&["-i", "-o", "-e", "--input", "--output", "--error"], 0),
        "timeout" => spec(&["-s", "-k", "--signal", "--kill-after"], 1),
        "chrt" => spec(&[], 1),
        "taskset" => spec(&[], 1),
        "chroot" => spec(&["--userspec", "--groups"], 1),
        "strace" | "ltrace" => spec(
            &[
                "-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X",
            ],
            0,
        ),
        "xargs" => spec(
            &[
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "-d",
                "-E",
                "-a",
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-procs",
                "--max-lines",
                "--max-chars",
                "--replace",
            ],
            0,
        ),
        "env" => Spec {
            assignments: true,
            ..spec(&["-u", "-C", "--unset", "--chdir"], 0)
        },
        "sudo" => Spec {
            assignments: true,
            ..spec(
                &[
                    "-u",
                    "-g",
                    "-h",
                    "-p",
                    "-C",
                    "-D",
                    "-r",
                    "-t",
                    "-U",
                    "-T",
                    "--user",
                    "--group",
                    "--host",
                    "--prompt",
                    "--chdir",
                    "--role",
                    "--type",
                    "--other-user",
                    "--close-from",
                    "--command-timeout",
                ],
                0,
            )
        },
        "doas" => spec(&["-u", "-C"], 0),
        "su" | "runuser" => Spec {
            script_option: Some("-c"),
            ..spec(
                &[
                    "-c",
                    "-u",
                    "-g",
                    "-G",
                    "-s",
                    "--command",
                    "--shell",
                    "--group",
                ],
                0,
            )
        },
        "flock" => Spec {
            script_option: Some("-c"),
            ..spec(
                &[
                    "-c",
                    "-w",
                    "-E",
                    "--command",
                    "--timeout",
                    "--conflict-exit-code",
                ],
                1,
            )
        },
        "script" => Spec {
            script_option: Some("-c"),
            ..spec(&["-c", "-E", "-I", "-O", "-B", "-T", "-m", "--command"], 0)
        },
        _ => return None,
    })
}

/// Whether `program` (a base name) runs the program named in its arguments.
pub(crate) fn is_wrapper(program: &str) -> bool {
    lookup(program).is_some() || program == "watch"
}

/// Where the wrapped program starts in `words` (`words[0]` is the wrapper).
pub(crate) fn unwrap(program: &str, words: &[String]) -> Wrapped {
    if program == "watch" {
        // watch joins its operands into a string for `sh -c`.
        let start = skip_options(words, &["-n", "-d", "--interval", "--differences"], false);
        return match words.get(start..) {
            Some(rest) if !rest.is_empty() => Wrapped::Script(rest.join(" ")),
            _ => Wrapped::Nothing,
        };
    }
    let Some(spec) = lookup(program) else {
        return Wrapped::Nothing;
    };
    // env -S / --split-string: the string is split into a program and its arguments.
    if program == "env" {
        for (i, w) in words.iter().enumerate().skip(1) {
            if w == "-S" || w == "--split-string" {
                if let Some(s) = words.get(i + 1) {
                    return Wrapped::Script(s.clone());
                }
            } else if let Some(s) = w.strip_prefix("--split-string=") {
                return Wrapped::Script(s.to_string());
            } else if let Some(s) = w.strip_prefix("-S").filter(|s| !s.is_empty()) {
                return Wrapped::Script(s.to_string());
            } else if !w.starts_with('-') && !w.contains('=') {
                break;
            }
        }
    }
    if let Some(flag) = spec.script_option {
        if let Some(i) = words.iter().position(|w| w == flag || w == "--command") {
            if let Some(s) = words.get(i + 1) {
                return Wrapped::Script(s.clone());
            }
        }
    }
    let mut start = skip_options(words, spec.value_options, spec.assignments);
    // taskset -c LIST / chrt -p: the value took the place of the operand.
    let operands = match program {
        "taskset" if words.iter().any(|w| w == "-c" || w == "--cpu-list") => 0,
        _ => spec.operands,
    };
    if program == "taskset" && operands == 0 {
        start = skip_options(words, &["-c", "--cpu-list"], false);
    }
    start += operands;
    if start < words.len() {
        Wrapped::Command(start)
    } else {
        Wrapped::Nothing
    }
}

/// The index of the first word after the options (and `NAME=value` settings).
fn skip_options(words: &[String], value_options: &[&str], assignments: bool) -> usize {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        if w == "--" {
            return i + 1;
        }
        if w.starts_with('-') && w.len() > 1 {
            i += if value_options.contains(&w.as_str()) {
                2
            } else {
                1
            };
        } else if assignments && is_assignment(w) {
            i += 1;
        } else {
            break;
        }
    }
    i
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}
