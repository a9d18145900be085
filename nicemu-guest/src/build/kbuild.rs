// SPDX-License-Identifier: Apache-2.0
//! Which changed source files end up only in loadable modules: kbuild's object lists of the
//! file's directory Makefile (`obj-y`, `obj-m`, `obj-$(CONFIG_X)`, composite `NAME-y` /
//! `NAME-objs` / `NAME-$(CONFIG_X)`) evaluated against the kernel's `.config`
//! (Documentation/kbuild/makefiles.rst, "Built-in object goals" and "Loadable module goals").
//!
//! A directory can hold both: `net/core` has built-in `dev.o` and modular `pktgen.o`, so a
//! patch to `net/core/dev.c` needs a whole kernel although the directory has modules. Anything
//! the lists do not settle counts as built in — a whole build is always correct.

use std::collections::HashMap;

/// Where an object goes in a kernel built with a given config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Goal {
    BuiltIn,
    Module,
    NotBuilt,
}

/// `CONFIG_X=y|m` lines of a `.config`.
pub fn parse_config(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.starts_with("CONFIG_"))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// True when `file` (a name in the directory of `makefile`) is compiled only into modules
/// under `config`. For a `.c`/`.S` file its object's goals decide; for any other file (a
/// header, the Makefile itself) the directory must build modules and nothing built in.
pub fn only_in_modules(makefile: &str, config: &HashMap<String, String>, file: &str) -> bool {
    let lists = object_lists(makefile);
    let stem = file.strip_suffix(".c").or_else(|| file.strip_suffix(".S"));
    match stem {
        Some(stem) => goal_of(&lists, config, &format!("{stem}.o"), 0) == Goal::Module,
        None => {
            let goals: Vec<Goal> = lists
                .iter()
                .filter(|(var, _)| var.starts_with("obj-"))
                .flat_map(|(var, objs)| {
                    objs.iter()
                        // An object is NAME.o exactly (kbuild's own rule).
                        .filter(|o| {
                            std::path::Path::new(o)
                                .extension()
                                .is_some_and(|e| e == "o")
                        })
                        .map(move |_| var_goal(var, config))
                })
                .collect();
            goals.contains(&Goal::Module) && !goals.contains(&Goal::BuiltIn)
        }
    }
}

/// `(variable, words)` of every assignment, continuation lines joined, comments dropped.
fn object_lists(makefile: &str) -> Vec<(String, Vec<String>)> {
    let joined = makefile.replace("\\\n", " ");
    joined
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .filter_map(|l| {
            let (lhs, rhs) = l
                .split_once(":=")
                .or_else(|| l.split_once("+="))
                .or_else(|| l.split_once('='))?;
            let var = lhs.trim();
            (!var.is_empty() && !var.contains(char::is_whitespace)).then(|| {
                (
                    var.to_owned(),
                    rhs.split_whitespace().map(str::to_owned).collect(),
                )
            })
        })
        .collect()
}

/// The goal of an `obj-…` variable: `obj-y`, `obj-m`, `obj-$(CONFIG_X)`.
fn var_goal(var: &str, config: &HashMap<String, String>) -> Goal {
    match var.strip_prefix("obj-") {
        Some("y") => Goal::BuiltIn,
        Some("m") => Goal::Module,
        Some(cond) => cond_goal(cond, config),
        None => Goal::NotBuilt,
    }
}

/// `$(CONFIG_X)` → y/m/unset, or `y`/`m`/`objs` written out.
fn cond_goal(cond: &str, config: &HashMap<String, String>) -> Goal {
    let value = match cond {
        "y" | "objs" => "y",
        "m" => "m",
        c => match c.strip_prefix("$(").and_then(|c| c.strip_suffix(')')) {
            Some(sym) => config.get(sym).map(String::as_str).unwrap_or("n"),
            None => return Goal::BuiltIn, // an expression kbuild evaluates: not settled here
        },
    };
    match value {
        "y" => Goal::BuiltIn,
        "m" => Goal::Module,
        _ => Goal::NotBuilt,
    }
}

/// Where `obj` goes: built in if any list puts it (or the composite object it is part of)
/// there; a module if only modules take it.
fn goal_of(
    lists: &[(String, Vec<String>)],
    config: &HashMap<String, String>,
    obj: &str,
    depth: u32,
) -> Goal {
    if depth > 4 {
        return Goal::BuiltIn;
    }
    let mut goals = Vec::new();
    for (var, _) in lists.iter().filter(|(_, o)| o.iter().any(|w| w == obj)) {
        if var.starts_with("obj-") {
            goals.push(var_goal(var, config));
        } else if let Some((name, cond)) = var.rsplit_once('-') {
            // A part of composite object NAME.o (igb-y := igb_main.o …).
            if cond_goal(cond, config) != Goal::NotBuilt {
                goals.push(goal_of(lists, config, &format!("{name}.o"), depth + 1));
            }
        }
    }
    if goals.contains(&Goal::BuiltIn) {
        Goal::BuiltIn
    } else if goals.contains(&Goal::Module) {
        Goal::Module
    } else {
        Goal::NotBuilt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// drivers/net/ethernet/intel/igb/Makefile of Linux 7.2 (its object lists).
    const IGB: &str = "obj-$(CONFIG_IGB) += igb.o\n\n\
        igb-y := igb_main.o igb_ethtool.o e1000_82575.o \\\n\
        \t e1000_mac.o e1000_nvm.o e1000_phy.o e1000_mbx.o \\\n\
        \t e1000_i210.o igb_ptp.o igb_hwmon.o igb_xsk.o\n";
    /// An excerpt of net/core/Makefile of Linux 7.2.
    const NET_CORE: &str = "# core\nobj-y := sock.o skbuff.o \\\n\t flow_dissector.o\n\
        obj-y\t\t     += dev.o dev_api.o \\\n\t\t\tgro.o\n\
        obj-$(CONFIG_NET_PKTGEN) += pktgen.o\nobj-$(CONFIG_NETPOLL) += netpoll.o\n";

    fn config(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        parse_config(
            &pairs
                .iter()
                .map(|(k, v)| format!("{k}={v}\n"))
                .collect::<String>(),
        )
    }

    #[test]
    fn a_driver_built_as_a_module_is_module_source() {
        let c = config(&[("CONFIG_IGB", "m")]);
        assert!(only_in_modules(IGB, &c, "igb_main.c"));
        assert!(only_in_modules(IGB, &c, "igb.h"));
        assert!(only_in_modules(IGB, &c, "Makefile"));
        // Built in (or not configured), or a file the lists do not name: not module source.
        assert!(!only_in_modules(
            IGB,
            &config(&[("CONFIG_IGB", "y")]),
            "igb_main.c"
        ));
        assert!(!only_in_modules(IGB, &config(&[]), "igb_main.c"));
        assert!(!only_in_modules(IGB, &c, "new_file.c"));
    }

    #[test]
    fn built_in_files_of_a_directory_with_modules_are_not() {
        let c = config(&[("CONFIG_NET_PKTGEN", "m"), ("CONFIG_NETPOLL", "y")]);
        assert!(!only_in_modules(NET_CORE, &c, "dev.c"));
        assert!(
            !only_in_modules(NET_CORE, &c, "gro.c"),
            "continuation lines"
        );
        assert!(
            !only_in_modules(NET_CORE, &c, "netpoll.c"),
            "CONFIG_NETPOLL=y"
        );
        assert!(only_in_modules(NET_CORE, &c, "pktgen.c"));
        assert!(
            !only_in_modules(NET_CORE, &c, "dev.h"),
            "the directory builds in"
        );
    }
}
