// SPDX-License-Identifier: Apache-2.0
//! The configuration a whole-kernel build starts from: x86_64 defconfig + the repo's fragment
//! (the default), a developer's tree's own `.config`, or a full config given with `--config`;
//! then every `--config-fragment` merged in order (kbuild's `merge_config.sh`). A developer's
//! config is kept as it is except for what the scenarios need and it lacks, which is added
//! through the kernel's own `scripts/config` before `olddefconfig`, and named.

use std::path::Path;

use crate::error::{Error, Result};

/// The config fragment merged onto x86_64_defconfig.
pub const FRAGMENT: &str = include_str!("../../kernel/nicemu.config");

/// The debug fragment `NAME-debug` kernels merge after [`FRAGMENT`] (lockdep, atomic-sleep
/// checks, KASAN, kmemleak, UBSAN, debug objects, debug info for decoding call traces).
pub const DEBUG_FRAGMENT: &str = include_str!("../../kernel/debug.config");

/// The LOCALVERSION of a debug kernel ("7.2.13-nicemu-debug").
pub const DEBUG_LOCALVERSION: &str = "-nicemu-debug";

/// The fragment's section that only makes the harness's own builds small; never forced on a
/// developer's config.
const SMALL_BUILD_MARKER: &str = "# keep the build small and quick";
/// Options of the fragment that are the developer's choice (the preemption model), never
/// forced on a developer's config.
const NOT_FORCED: &[&str] = &["CONFIG_PREEMPT_DYNAMIC", "CONFIG_PREEMPT_LAZY"];

/// A configuration file given on the command line (its name for messages, its text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    /// Where it came from.
    pub name: String,
    /// Its contents.
    pub text: String,
}

/// What a whole-kernel build's `.config` is made from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigInput {
    /// A full config (`--config`, or the tree's `.config`); None: defconfig + the fragment.
    pub base: Option<ConfigFile>,
    /// `--config-fragment` files, merged in order on top.
    pub fragments: Vec<ConfigFile>,
    /// A debug kernel (`sid-debug`): [`DEBUG_FRAGMENT`] merged after the base (before the
    /// `--config-fragment`s), built with [`DEBUG_LOCALVERSION`].
    pub debug: bool,
}

impl ConfigInput {
    /// Bytes that identify the configuration (cache keys, the configured stamp).
    pub fn identity(&self) -> String {
        // The default's identity is the fragment itself, as configured stamps held before.
        if self.is_default() {
            return FRAGMENT.to_owned();
        }
        let mut s = String::from(if self.debug {
            "config-v1 debug\n"
        } else {
            "config-v1\n"
        });
        match &self.base {
            Some(b) => s.push_str(&b.text),
            None => s.push_str(FRAGMENT),
        }
        if self.debug {
            s.push_str("\n--debug--\n");
            s.push_str(DEBUG_FRAGMENT);
        }
        for f in &self.fragments {
            s.push_str("\n--fragment--\n");
            s.push_str(&f.text);
        }
        s
    }

    /// The fragments merged onto the base, in order: the debug fragment of a debug kernel,
    /// then the `--config-fragment`s.
    pub fn all_fragments(&self) -> Vec<ConfigFile> {
        let debug = self.debug.then(|| ConfigFile {
            name: "debug.config".into(),
            text: DEBUG_FRAGMENT.into(),
        });
        debug
            .into_iter()
            .chain(self.fragments.iter().cloned())
            .collect()
    }

    /// True when nothing beyond the default was asked for.
    pub fn is_default(&self) -> bool {
        self.base.is_none() && self.fragments.is_empty() && !self.debug
    }
}

/// Reads `path` as a kernel config (`what`: the option that named it), or says why it is not.
pub fn read(path: &Path, what: &str) -> Result<ConfigFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Usage(format!("{what} {}: {e}", path.display())))?;
    let name = format!("{what} {}", path.display());
    check_syntax(&text, &name)?;
    Ok(ConfigFile { name, text })
}

/// A kernel config or fragment holds `CONFIG_NAME=value` lines, `# CONFIG_NAME is not set`
/// lines, comments and blank lines, and at least one option.
pub fn check_syntax(text: &str, name: &str) -> Result<()> {
    let mut options = 0;
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(c) = t.strip_prefix('#') {
            if option_name(c.trim().strip_suffix(" is not set").unwrap_or("")).is_some() {
                options += 1;
            }
            continue;
        }
        match t.split_once('=') {
            Some((k, _)) if option_name(k).is_some() => options += 1,
            _ => {
                return Err(Error::Usage(format!(
                    "{name}: line {} is not a kernel config line (`CONFIG_NAME=value` or `# CONFIG_NAME is not set`): {}",
                    i + 1,
                    t.chars().take(60).collect::<String>()
                )))
            }
        }
    }
    if options == 0 {
        return Err(Error::Usage(format!(
            "{name}: no CONFIG_ option in it; not a kernel config"
        )));
    }
    Ok(())
}

fn option_name(s: &str) -> Option<&str> {
    let rest = s.strip_prefix("CONFIG_")?;
    (!rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(s)
}

/// The options the scenarios need (name, value): the fragment's lines before its small-build
/// section, except the preemption model.
pub fn needs() -> Vec<(String, String)> {
    FRAGMENT
        .lines()
        .take_while(|l| l.trim() != SMALL_BUILD_MARKER)
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.starts_with("CONFIG_") && !NOT_FORCED.contains(k))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// `config` after `fragments` (later lines win), as option → value ("n" for not set).
pub fn merged(config: &str, fragments: &[ConfigFile]) -> std::collections::HashMap<String, String> {
    let mut m = super::kbuild::parse_config(config);
    for f in fragments {
        for (k, v) in super::kbuild::parse_config(&f.text) {
            m.insert(k, v);
        }
        for l in f.text.lines() {
            if let Some(k) = l
                .trim()
                .strip_prefix("# ")
                .and_then(|c| c.strip_suffix(" is not set"))
            {
                m.insert(k.to_owned(), "n".into());
            }
        }
    }
    m
}

/// The `scripts/config` arguments that add the needs `have` lacks: a module or built-in
/// option that is off gets what the fragment asks (`--module`/`--enable`); `m` where `y` is
/// asked, or `y` where `m` is, already serves.
pub fn additions(have: &std::collections::HashMap<String, String>) -> Vec<String> {
    let mut args = Vec::new();
    for (k, want) in needs() {
        let got = have.get(&k).map_or("n", String::as_str);
        let on = |v: &str| v == "y" || v == "m";
        if on(&want) && on(got) || got == want {
            continue;
        }
        let name = k.trim_start_matches("CONFIG_").to_owned();
        match want.as_str() {
            "y" => args.extend(["--enable".to_owned(), name]),
            "m" => args.extend(["--module".to_owned(), name]),
            v => args.extend(["--set-val".to_owned(), name, v.to_owned()]),
        }
    }
    args
}

/// The needed options whose value `after` changed from `before`: `CONFIG_X (n → m)`.
pub fn changed(before: &str, after: &str) -> Vec<String> {
    let (b, a) = (
        super::kbuild::parse_config(before),
        super::kbuild::parse_config(after),
    );
    needs()
        .into_iter()
        .filter_map(|(k, _)| {
            let was = b.get(&k).map_or("n", String::as_str);
            let is = a.get(&k).map_or("n", String::as_str);
            (was != is).then(|| format!("{k} ({was} → {is})"))
        })
        .collect()
}

/// A fragment's options the final config does not have as asked, as `merge_config.sh` warns:
/// unknown to this kernel, or a dependency missing.
pub fn fragment_misses(fragment: &ConfigFile, config: &str) -> Vec<String> {
    unmet_options(&fragment.text, config)
}

/// `CONFIG_X=v` lines of `fragment` whose value the final `.config` does not have ("=n"
/// is met by an absent option or `# CONFIG_X is not set`), as `CONFIG_X=v (got w)`.
pub fn unmet_options(fragment: &str, config: &str) -> Vec<String> {
    let have = super::kbuild::parse_config(config);
    fragment
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.starts_with("CONFIG_"))
        .filter_map(|(k, want)| {
            let got = have.get(k).map(String::as_str).unwrap_or("n");
            (got != want.trim()).then(|| format!("{k}={want} (got {got})"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_a_kernel_config_is_one_line() {
        let e = check_syntax("hello world\n", "--config x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 1 is not a kernel config line") && !e.contains('\n'),
            "{e}"
        );
        let e = check_syntax("# just a comment\n\n", "--config x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no CONFIG_ option"), "{e}");
        let e = check_syntax("CONFIG_IGB=m\nCONFIG BAD=y\n", "--config-fragment f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        check_syntax(
            "#\n# Automatically generated\nCONFIG_IGB=m\n# CONFIG_DRM is not set\n",
            "x",
        )
        .unwrap();
    }

    #[test]
    fn a_developer_config_gets_only_the_needs_it_lacks() {
        let needs = needs();
        assert!(needs.iter().any(|(k, v)| k == "CONFIG_IGB" && v == "m"));
        assert!(needs.iter().any(|(k, _)| k == "CONFIG_PREEMPT_TRACER"));
        assert!(
            !needs.iter().any(|(k, _)| k == "CONFIG_DRM"),
            "small-build lines stay out"
        );
        assert!(!needs.iter().any(|(k, _)| k == "CONFIG_DEBUG_INFO_NONE"));
        assert!(!needs.iter().any(|(k, _)| k == "CONFIG_PREEMPT_LAZY"));
        // A config with everything on: nothing to add.
        let all: String = needs.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        assert!(additions(&merged(&all, &[])).is_empty());
        // igb built in serves; ixgbe off and the tracer off are added.
        let mut dev = all.replace("CONFIG_IGB=m", "CONFIG_IGB=y");
        dev = dev.replace("CONFIG_IXGBE=m\n", "# CONFIG_IXGBE is not set\n");
        dev = dev.replace("CONFIG_PREEMPT_TRACER=y\n", "");
        assert_eq!(
            additions(&merged(&dev, &[])),
            ["--module", "IXGBE", "--enable", "PREEMPT_TRACER"]
        );
        // A fragment that turns ixgbe on leaves only the tracer.
        let f = ConfigFile {
            name: "f".into(),
            text: "CONFIG_IXGBE=m\n".into(),
        };
        assert_eq!(
            additions(&merged(&dev, &[f])),
            ["--enable", "PREEMPT_TRACER"]
        );
        assert_eq!(
            changed(&dev, &all),
            [
                "CONFIG_IGB (y → m)",
                "CONFIG_IXGBE (n → m)",
                "CONFIG_PREEMPT_TRACER (n → y)"
            ]
        );
    }

    #[test]
    fn the_configuration_s_identity_covers_base_and_fragments() {
        let d = ConfigInput::default();
        assert!(d.is_default());
        let f = |t: &str| ConfigFile {
            name: "f".into(),
            text: t.into(),
        };
        let a = ConfigInput {
            base: Some(f("CONFIG_IGB=m\n")),
            fragments: vec![],
            debug: false,
        };
        let b = ConfigInput {
            base: Some(f("CONFIG_IGB=m\n")),
            fragments: vec![f("CONFIG_KASAN=y\n")],
            debug: false,
        };
        assert_ne!(d.identity(), a.identity());
        assert_ne!(a.identity(), b.identity());
        let debug = ConfigInput {
            debug: true,
            ..ConfigInput::default()
        };
        assert!(!debug.is_default());
        assert!(debug.identity().contains(DEBUG_FRAGMENT));
        assert_ne!(debug.identity(), d.identity());
        // The same fragment given with --config-fragment is another build (another
        // LOCALVERSION): the two never share a cache entry.
        let as_fragment = ConfigInput {
            fragments: vec![f(DEBUG_FRAGMENT)],
            ..ConfigInput::default()
        };
        assert_ne!(debug.identity(), as_fragment.identity());
    }
}
