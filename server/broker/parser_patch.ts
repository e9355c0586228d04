/**
 * Less memory per connection in mqtt-packet's parser (issue 33).
 *
 * - mqtt-packet 9 buffers incoming bytes in `bl()`, a BufferListStream: a whole
 *   `readable-stream` Duplex (two stream states, listeners) per connection, of which the parser
 *   uses only the BufferList methods (`append`, `consume`, `readUInt8`, `slice`, …). A plain
 *   BufferList from the same `bl` module does the same with none of the stream.
 * - After a CONNECT the parser keeps the whole CONNECT packet as `settings` (client id, username,
 *   the password's bytes, properties) for as long as the connection lives, and reads only its
 *   `protocolVersion` and `bridgeMode` from it again. It keeps a shared object with those two.
 *
 * Patches the shared prototype once; the parser passed in (already made, nothing parsed yet) gets
 * its plain list here.
 *
 * @example
 * ```ts
 * const client = aedes.handle(stream);
 * patchParser(client._parser); // before the first byte is parsed
 * ```
 */

interface BufferListCtor {
  new (): { length: number };
}

interface ParserLike {
  _list: { length: number };
  packet: object;
  settings: unknown;
  error: unknown;
  _stateCounter: number;
  _resetState(): void;
  _parseConnect(): unknown;
}

/** What the parser reads from `settings` after a CONNECT (mqtt-packet 9 `parser.js`). */
interface ParserSettings {
  readonly protocolVersion: number;
  readonly bridgeMode: boolean;
}

const patched = new WeakSet<object>();
const settingsCache = new Map<string, ParserSettings>();

/** One frozen settings object per (protocol version, bridge mode), shared by all parsers. */
export function parserSettings(protocolVersion: number, bridgeMode: boolean): ParserSettings {
  const key = `${protocolVersion}/${bridgeMode}`;
  let s = settingsCache.get(key);
  if (s === undefined) {
    s = Object.freeze({ protocolVersion, bridgeMode });
    settingsCache.set(key, s);
  }
  return s;
}

/**
 * Patches the prototype of `parser` (an mqtt-packet Parser) once and gives `parser` a plain
 * BufferList when its list is still empty. Anything not shaped as expected is left alone.
 */
export function patchParser(parser: unknown): void {
  if (!parser || typeof parser !== "object") return;
  const p = parser as ParserLike;
  const list = p._list as object | undefined;
  const BufferList = list && (Object.getPrototypeOf(list).constructor as { BufferList?: unknown })
    .BufferList as BufferListCtor | undefined;
  const proto = Object.getPrototypeOf(p) as ParserLike;
  if (!patched.has(proto) && typeof BufferList === "function") {
    const Packet = p.packet.constructor as new () => object;
    // mqtt-packet 9 `_resetState`, with a plain BufferList.
    proto._resetState = function (this: ParserLike): void {
      this.packet = new Packet();
      this.error = null;
      this._list = new BufferList();
      this._stateCounter = 0;
    };
    const parseConnect = proto._parseConnect;
    proto._parseConnect = function (this: ParserLike): unknown {
      const packet = parseConnect.call(this);
      const s = this.settings as Partial<ParserSettings> | null;
      // mqtt-packet set `settings` to the CONNECT it parsed; keep only what it reads later.
      if (packet && s === packet && typeof s.protocolVersion === "number") {
        this.settings = parserSettings(s.protocolVersion, s.bridgeMode === true);
      }
      return packet;
    };
    patched.add(proto);
  }
  if (patched.has(proto) && typeof BufferList === "function" && !(list instanceof BufferList)) {
    if (p._list.length === 0) p._list = new BufferList();
  }
}
