/**
 * Faster reads for the `bl` BufferList inside mqtt-packet's parser (issue 19).
 *
 * bl 6 reads every number by copying its bytes into a new Buffer first
 * (`this.slice(offset, offset + n).readUInt8(0)`), and mqtt-packet reads each header byte, each
 * length byte, the topic length and the packet id that way: about eight small Buffers and
 * offset arrays per packet, a tenth of the main thread's allocations under load. When the list
 * holds one buffer (a whole packet in one WebSocket frame or one TCP read, the usual case), these
 * read it in place. Anything else (several buffers, an offset out of range) goes to bl's own
 * method, so results and errors stay bl's.
 *
 * @example
 * ```ts
 * patchBufferList(client._parser._list); // once is enough: it patches the shared prototype
 * ```
 */

interface BufferListLike {
  _bufs: Uint8Array[];
  readUInt8(offset?: number): number;
  readUInt16BE(offset?: number): number;
  readUInt32BE(offset?: number): number;
  toString(encoding?: string, start?: number, end?: number): string;
}

interface NodeBuffer extends Uint8Array {
  toString(encoding?: string, start?: number, end?: number): string;
}

const patched = new WeakSet<object>();

/** Patches the prototype of `list` (a bl BufferList) once; later calls do nothing. */
export function patchBufferList(list: unknown): void {
  const proto = list && typeof list === "object" ? Object.getPrototypeOf(list) : null;
  if (!proto || patched.has(proto) || !("_bufs" in (list as object))) return;
  const p = proto as BufferListLike;
  const read8 = p.readUInt8;
  const read16 = p.readUInt16BE;
  const read32 = p.readUInt32BE;
  const toString = p.toString;
  // The one buffer of the list when `offset` .. `offset + n` lies inside it, else null.
  const single = (self: BufferListLike, offset: number, n: number): Uint8Array | null => {
    const bufs = self._bufs;
    if (bufs.length !== 1 || !Number.isInteger(offset) || offset < 0) return null;
    const b = bufs[0];
    return offset + n <= b.length ? b : null;
  };
  p.readUInt8 = function (this: BufferListLike, offset = 0): number {
    const b = single(this, offset, 1);
    return b ? b[offset] : read8.call(this, offset);
  };
  p.readUInt16BE = function (this: BufferListLike, offset = 0): number {
    const b = single(this, offset, 2);
    return b ? (b[offset] << 8) | b[offset + 1] : read16.call(this, offset);
  };
  p.readUInt32BE = function (this: BufferListLike, offset = 0): number {
    const b = single(this, offset, 4);
    return b
      ? b[offset] * 0x1000000 + ((b[offset + 1] << 16) | (b[offset + 2] << 8) | b[offset + 3])
      : read32.call(this, offset);
  };
  p.toString = function (this: BufferListLike, encoding?: string, start?: number, end?: number) {
    if (typeof start === "number" && typeof end === "number" && end >= start) {
      const b = single(this, start, end - start);
      if (b) return (b as NodeBuffer).toString(encoding, start, end);
    }
    return toString.call(this, encoding, start, end);
  };
  patched.add(proto);
}
