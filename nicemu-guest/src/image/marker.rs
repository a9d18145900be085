// SPDX-License-Identifier: Apache-2.0
//! `/bin/nicemu-mark ID`: the guest program that executes marker instruction ID (0..=254)
//! for nicemu's TCG plugin ([`nicemu_tcg_plugin::format`]: `nopl 0x4e4943NN(%rax)`) and
//! exits with status ID. Elsewhere the marker is a no-op, so the program runs anywhere.
//! Id 0 (the configuration marker) first reads its standard input (the guest's
//! `/proc/kallsyms`) into memory and points `rsi`/`rdx` at it for the plugin.
//!
//! It is a static x86-64 ELF of about 9 KiB written here, byte by byte: no libc, no
//! compiler, nothing from the sid root, and nothing a window would count beyond its own
//! few instructions. The code parses the decimal argument, jumps to entry ID of a table of
//! 32-byte entries (`nopl` marker, `exit(ID)`), or prints its usage and exits 255.
//! The whole file is one read-and-execute segment: it writes no memory of its own.

use std::collections::HashMap;

use nicemu_tcg_plugin::format::marker_bytes;

/// Path of the program in the guest.
pub const GUEST_PATH: &str = "/bin/nicemu-mark";

/// Where the single segment is loaded.
const BASE: u64 = 0x40_0000;
/// ELF header (64 bytes) and one program header (56 bytes).
const HEADERS: usize = 64 + 56;
/// Bytes per table entry.
const ENTRY: usize = 32;
/// Exit status for a missing or bad argument (never a marker id).
const USAGE_STATUS: u8 = 255;
/// Most bytes id 0 reads from its standard input (a guest's text symbols are ~7 MiB).
const INPUT_CAP: u32 = 64 << 20;
const USAGE: &[u8] = b"usage: nicemu-mark ID (0..254): executes marker instruction ID \
for nicemu's TCG plugin and exits with status ID\n";

/// A tiny assembler: bytes, labels and relative jumps fixed up at the end.
#[derive(Default)]
struct Asm {
    code: Vec<u8>,
    labels: HashMap<&'static str, usize>,
    /// (position of the displacement, label, displacement size in bytes).
    fixups: Vec<(usize, &'static str, usize)>,
}

impl Asm {
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.code.extend_from_slice(b);
        self
    }
    fn label(&mut self, l: &'static str) -> &mut Self {
        self.labels.insert(l, self.code.len());
        self
    }
    /// Opcode bytes followed by a displacement to `l` of `size` bytes (1 or 4), relative
    /// to the end of the instruction (which the displacement ends).
    fn rel(&mut self, op: &[u8], l: &'static str, size: usize) -> &mut Self {
        self.bytes(op);
        self.fixups.push((self.code.len(), l, size));
        self.code.extend(std::iter::repeat_n(0, size));
        self
    }
    fn align(&mut self, to: usize, fill: u8) -> &mut Self {
        while !(HEADERS + self.code.len()).is_multiple_of(to) {
            self.code.push(fill);
        }
        self
    }
    fn finish(mut self) -> Vec<u8> {
        for (at, l, size) in std::mem::take(&mut self.fixups) {
            let target = i64::try_from(self.labels[l]).expect("small program");
            let d = target - i64::try_from(at + size).expect("small program");
            match size {
                1 => self.code[at] = i8::try_from(d).expect("short jump in range") as u8,
                _ => self.code[at..at + 4].copy_from_slice(&(d as i32).to_le_bytes()),
            }
        }
        self.code
    }
}

/// Id 0: standard input into an anonymous mapping of [`INPUT_CAP`] bytes, read until
/// end of file (or the mapping is full); then `rsi` = the text, `rdx` = its length for the
/// plugin, and `eax` = 0 again.
fn read_input(a: &mut Asm) {
    a.bytes(&[0x31, 0xff]) // xor edi, edi: any address
        .bytes(&[0xbe])
        .bytes(&INPUT_CAP.to_le_bytes()) // mov esi, INPUT_CAP
        .bytes(&[0xba, 0x03, 0, 0, 0]) // mov edx, PROT_READ | PROT_WRITE
        .bytes(&[0x41, 0xba, 0x22, 0x40, 0, 0]) // mov r10d, MAP_PRIVATE|ANONYMOUS|NORESERVE
        .bytes(&[0x49, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff]) // mov r8, -1
        .bytes(&[0x45, 0x31, 0xc9]) // xor r9d, r9d
        .bytes(&[0xb8, 0x09, 0, 0, 0]) // mov eax, 9 (mmap)
        .bytes(&[0x0f, 0x05]) // syscall
        .bytes(&[0x48, 0x3d, 0x01, 0xf0, 0xff, 0xff]) // cmp rax, -4095
        .rel(&[0x0f, 0x83], "usage", 4) // jae usage: mmap failed
        .bytes(&[0x48, 0x89, 0xc3]) // mov rbx, rax: the buffer
        .bytes(&[0x45, 0x31, 0xe4]) // xor r12d, r12d: bytes read
        .label("read")
        .bytes(&[0xba])
        .bytes(&INPUT_CAP.to_le_bytes()) // mov edx, INPUT_CAP
        .bytes(&[0x4c, 0x29, 0xe2]) // sub rdx, r12: room left
        .rel(&[0x74], "input", 1) // je input: full
        .bytes(&[0x31, 0xff]) // xor edi, edi: fd 0
        .bytes(&[0x4a, 0x8d, 0x34, 0x23]) // lea rsi, [rbx+r12]
        .bytes(&[0x31, 0xc0]) // xor eax, eax (read)
        .bytes(&[0x0f, 0x05]) // syscall
        .bytes(&[0x48, 0x85, 0xc0]) // test rax, rax
        .rel(&[0x7e], "input", 1) // jle input: end of file or error
        .bytes(&[0x49, 0x01, 0xc4]) // add r12, rax
        .rel(&[0xeb], "read", 1) // jmp read
        .label("input")
        .bytes(&[0x48, 0x89, 0xde]) // mov rsi, rbx
        .bytes(&[0x4c, 0x89, 0xe2]) // mov rdx, r12
        .bytes(&[0x31, 0xc0]); // xor eax, eax: id 0
}

/// The program's code: parser, input of id 0, dispatch, usage, table.
fn code() -> Vec<u8> {
    let mut a = Asm::default();
    a.bytes(&[0x48, 0x8b, 0x74, 0x24, 0x10]) // mov rsi, [rsp+16]: argv[1]
        .bytes(&[0x48, 0x85, 0xf6]) // test rsi, rsi
        .rel(&[0x0f, 0x84], "usage", 4) // je usage
        .bytes(&[0x31, 0xc0]) // xor eax, eax
        .bytes(&[0x80, 0x3e, 0x00]) // cmp byte [rsi], 0
        .rel(&[0x0f, 0x84], "usage", 4) // je usage
        .label("digit")
        .bytes(&[0x0f, 0xb6, 0x0e]) // movzx ecx, byte [rsi]
        .bytes(&[0x85, 0xc9]) // test ecx, ecx
        .rel(&[0x74], "parsed", 1) // je parsed
        .bytes(&[0x83, 0xe9, 0x30]) // sub ecx, '0'
        .bytes(&[0x83, 0xf9, 0x09]) // cmp ecx, 9
        .rel(&[0x0f, 0x87], "usage", 4) // ja usage
        .bytes(&[0x6b, 0xc0, 0x0a]) // imul eax, eax, 10
        .bytes(&[0x01, 0xc8]) // add eax, ecx
        .bytes(&[0x3d, 0xfe, 0x00, 0x00, 0x00]) // cmp eax, 254
        .rel(&[0x0f, 0x87], "usage", 4) // ja usage
        .bytes(&[0x48, 0xff, 0xc6]) // inc rsi
        .rel(&[0xeb], "digit", 1) // jmp digit
        .label("parsed")
        .bytes(&[0x85, 0xc0]) // test eax, eax
        .rel(&[0x75], "dispatch", 1); // jne dispatch: only id 0 reads its input
    read_input(&mut a);
    a.label("dispatch")
        .bytes(&[0xc1, 0xe0, 0x05]) // shl eax, 5 (32-byte entries)
        .rel(&[0x48, 0x8d, 0x0d], "table", 4) // lea rcx, [rip+table]
        .bytes(&[0x48, 0x01, 0xc1]) // add rcx, rax
        .bytes(&[0xff, 0xe1]) // jmp rcx (rsi and rdx stay as they are)
        .label("usage")
        .bytes(&[0xb8, 0x01, 0, 0, 0]) // mov eax, 1 (write)
        .bytes(&[0xbf, 0x02, 0, 0, 0]) // mov edi, 2
        .rel(&[0x48, 0x8d, 0x35], "text", 4) // lea rsi, [rip+text]
        .bytes(&[0xba])
        .bytes(&(USAGE.len() as u32).to_le_bytes()) // mov edx, len
        .bytes(&[0x0f, 0x05]) // syscall
        .bytes(&[0xb8, 0x3c, 0, 0, 0]) // mov eax, 60 (exit)
        .bytes(&[0xbf, USAGE_STATUS, 0, 0, 0]) // mov edi, 255
        .bytes(&[0x0f, 0x05]) // syscall
        .label("text")
        .bytes(USAGE)
        .align(ENTRY, 0xcc)
        .label("table");
    for id in 0..=254u8 {
        let start = a.code.len();
        a.bytes(&marker_bytes(id)) // nopl 0x4e4943NN(%rax)
            .bytes(&[0xb8, 0x3c, 0, 0, 0]) // mov eax, 60 (exit)
            .bytes(&[0xbf, id, 0, 0, 0]) // mov edi, id
            .bytes(&[0x0f, 0x05]); // syscall
        a.code.resize(start + ENTRY, 0xcc); // int3 padding, never reached
    }
    a.finish()
}

/// The whole ELF file.
pub fn elf() -> Vec<u8> {
    let code = code();
    let size = (HEADERS + code.len()) as u64;
    let mut f = Vec::with_capacity(size as usize);
    // ELF header: 64-bit, little endian, version 1, System V ABI.
    f.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&2u16.to_le_bytes()); // e_type: ET_EXEC
    f.extend_from_slice(&62u16.to_le_bytes()); // e_machine: EM_X86_64
    f.extend_from_slice(&1u32.to_le_bytes()); // e_version
    f.extend_from_slice(&(BASE + HEADERS as u64).to_le_bytes()); // e_entry
    f.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
    f.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    f.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    f.extend_from_slice(&64u16.to_le_bytes()); // e_ehsize
    f.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
    f.extend_from_slice(&1u16.to_le_bytes()); // e_phnum
    f.extend_from_slice(&[0; 6]); // e_shentsize, e_shnum, e_shstrndx
                                  // Program header: one PT_LOAD, read + execute, the whole file at BASE.
    f.extend_from_slice(&1u32.to_le_bytes()); // p_type: PT_LOAD
    f.extend_from_slice(&5u32.to_le_bytes()); // p_flags: R | X
    f.extend_from_slice(&0u64.to_le_bytes()); // p_offset
    f.extend_from_slice(&BASE.to_le_bytes()); // p_vaddr
    f.extend_from_slice(&BASE.to_le_bytes()); // p_paddr
    f.extend_from_slice(&size.to_le_bytes()); // p_filesz
    f.extend_from_slice(&size.to_le_bytes()); // p_memsz
    f.extend_from_slice(&0x1000u64.to_le_bytes()); // p_align
    debug_assert_eq!(f.len(), HEADERS);
    f.extend_from_slice(&code);
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    /// The program in a file of its own (removed when dropped).
    struct Program(std::path::PathBuf);

    impl Program {
        fn new(name: &str) -> Program {
            let p = std::env::temp_dir().join(format!("nicemu-mark-{}-{name}", std::process::id()));
            std::fs::write(&p, elf()).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            Program(p)
        }
    }

    impl Drop for Program {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// The host is x86-64 Linux too: the program runs here, the marker being a no-op.
    #[test]
    fn the_program_exits_with_the_id_whose_table_entry_ran() {
        let p = Program::new("ids");
        for id in [0u8, 1, 9, 10, 77, 126, 129, 200, 254] {
            let st = Command::new(&p.0)
                .arg(id.to_string())
                .stdin(std::process::Stdio::null())
                .status()
                .unwrap();
            assert_eq!(st.code(), Some(i32::from(id)), "id {id}");
        }
    }

    /// Id 0 takes its whole input (larger than a pipe's buffer) before its marker.
    #[test]
    fn id_0_reads_its_input_to_the_end() {
        use std::io::Write;
        let p = Program::new("input");
        let mut child = Command::new(&p.0)
            .arg("0")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let text = "ffffffff81000000 T _stext\n".repeat(100_000);
        stdin.write_all(text.as_bytes()).unwrap();
        drop(stdin);
        assert_eq!(child.wait().unwrap().code(), Some(0));
    }

    #[test]
    fn bad_arguments_print_the_usage_and_exit_255() {
        let p = Program::new("usage");
        for args in [
            &[][..],
            &[""],
            &["255"],
            &["12x"],
            &["-1"],
            &["99999999999"],
        ] {
            let out = Command::new(&p.0).args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(255), "{args:?}");
            assert!(String::from_utf8_lossy(&out.stderr).starts_with("usage: nicemu-mark ID"));
        }
    }

    #[test]
    fn every_table_entry_holds_its_marker_once() {
        let e = elf();
        for id in 0..=254u8 {
            let m = marker_bytes(id);
            let hits: Vec<usize> = (0..e.len() - m.len())
                .filter(|&i| e[i..i + m.len()] == m)
                .collect();
            assert_eq!(hits.len(), 1, "marker {id}");
            assert_eq!(hits[0] % ENTRY, 0, "marker {id} starts an entry");
        }
    }
}
