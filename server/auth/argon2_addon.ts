/**
 * Facts about the `@node-rs/argon2` native addon that a platform needs. The addon is a `.node`
 * file shipped in one npm package per OS and CPU; a binary compiled for one platform contains only
 * the packages installed for it (Deno issue 32176), so the release build and the start-up
 * self-check both name the package they expect.
 */

/** The `@node-rs/argon2` version pinned in deno.json. */
export const ARGON2_VERSION = "2.2.1";

/** A platform as npm names it (`process.platform`, `process.arch`). */
export interface AddonPlatform {
  readonly os: string;
  readonly arch: string;
}

/** The machine type an addon file must declare for a platform. */
type BinaryFormat = { kind: "elf"; machine: number } | { kind: "pe"; machine: number };

const ELF_X86_64 = 0x3e;
const ELF_AARCH64 = 0xb7;
const PE_AMD64 = 0x8664;
const PE_ARM64 = 0xaa64;

function suffix(p: AddonPlatform): string {
  if (p.os === "linux") return `linux-${p.arch}-gnu`;
  if (p.os === "win32") return `win32-${p.arch}-msvc`;
  return `${p.os}-${p.arch}`;
}

/** The npm package that carries the addon for `p`, e.g. `@node-rs/argon2-linux-x64-gnu`. */
export function addonPackage(p: AddonPlatform): string {
  return `@node-rs/argon2-${suffix(p)}`;
}

/** The addon's file name inside its package, e.g. `argon2.linux-x64-gnu.node`. */
export function addonFile(p: AddonPlatform): string {
  return `argon2.${suffix(p)}.node`;
}

/** The addon package for the platform this process runs on. */
export function hostAddonPackage(): string {
  const arch = Deno.build.arch === "aarch64" ? "arm64" : "x64";
  const os = Deno.build.os === "windows" ? "win32" : Deno.build.os;
  return addonPackage({ os, arch });
}

function expectedFormat(p: AddonPlatform): BinaryFormat | null {
  const arm = p.arch === "arm64";
  if (p.os === "linux") return { kind: "elf", machine: arm ? ELF_AARCH64 : ELF_X86_64 };
  if (p.os === "win32") return { kind: "pe", machine: arm ? PE_ARM64 : PE_AMD64 };
  return null;
}

function readFormat(bytes: Uint8Array): BinaryFormat | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length >= 20 && bytes[0] === 0x7f && bytes[1] === 0x45 && bytes[2] === 0x4c) {
    // ELF: e_machine at offset 18, in the byte order given by EI_DATA (1 = little endian).
    return { kind: "elf", machine: view.getUint16(18, bytes[5] === 1) };
  }
  if (bytes.length >= 64 && bytes[0] === 0x4d && bytes[1] === 0x5a) {
    const pe = view.getUint32(0x3c, true);
    if (pe + 6 <= bytes.length && view.getUint32(pe, true) === 0x00004550) {
      return { kind: "pe", machine: view.getUint16(pe + 4, true) };
    }
  }
  return null;
}

/**
 * Checks that `bytes` is a native library built for `p` (ELF machine or PE machine type).
 * Returns null when it is, else the reason it is not.
 */
export function checkAddonBinary(bytes: Uint8Array, p: AddonPlatform): string | null {
  const want = expectedFormat(p);
  if (!want) return `no known binary format for ${p.os}/${p.arch}`;
  const got = readFormat(bytes);
  if (!got) return "not an ELF or PE library";
  if (got.kind !== want.kind) {
    const name = { elf: "an ELF", pe: "a PE" };
    return `${name[got.kind]} file, expected ${name[want.kind]} file`;
  }
  if (got.machine !== want.machine) {
    return `built for machine 0x${got.machine.toString(16)}, expected 0x${
      want.machine.toString(16)
    }`;
  }
  return null;
}
