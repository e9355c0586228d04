// The Go, Python and Java signature checks of docs/protocol.md ("Verifying a signature", issue 34)
// run as written, each wrapped in a small main, against signatures made by the server's own code:
// a fresh request is accepted, a changed body and an hour-old request are refused. (The TypeScript
// example runs in server/webhooks/signature_test.ts.)
import assert from "node:assert/strict";
import { join } from "node:path";
import { newWebhookSecret, sign } from "../server/webhooks/signature.ts";

const DOC = new URL("../docs/protocol.md", import.meta.url);

/** The first ```lang block after "### Verifying a signature". */
async function block(lang: string): Promise<string> {
  const doc = await Deno.readTextFile(DOC);
  const from = doc.indexOf("### Verifying a signature");
  assert.ok(from > 0, "docs/protocol.md has its Verifying a signature section");
  const open = "```" + lang + "\n";
  const start = doc.indexOf(open, from);
  assert.ok(start > 0, `a ${lang} block in that section`);
  return doc.slice(start + open.length, doc.indexOf("```", start + open.length));
}

interface Example {
  lang: string;
  tool: string;
  file: string;
  wrap(code: string): string;
  command(file: string, args: string[]): [string, string[]];
}

const GO_MAIN = `package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	body, _ := base64.StdEncoding.DecodeString(os.Args[5])
	h := http.Header{}
	h.Set("webhook-id", os.Args[2])
	h.Set("webhook-timestamp", os.Args[3])
	h.Set("webhook-signature", os.Args[4])
	fmt.Println(verifyWebhook(os.Args[1], h, body))
}
`;

const EXAMPLES: Example[] = [
  {
    lang: "go",
    tool: "go",
    file: "verify.go",
    wrap: (code) => GO_MAIN + "\n" + code,
    command: (file, args) => ["go", ["run", file, ...args]],
  },
  {
    lang: "python",
    tool: "python3",
    file: "verify.py",
    wrap: (code) =>
      code +
      "\nimport sys\nh = {'webhook-id': sys.argv[2], 'webhook-timestamp': sys.argv[3], " +
      "'webhook-signature': sys.argv[4]}\n" +
      "print(str(verify_webhook(sys.argv[1], h, base64.b64decode(sys.argv[5]))).lower())\n",
    command: (file, args) => ["python3", [file, ...args]],
  },
  {
    lang: "java",
    tool: "java",
    file: "Verify.java",
    wrap: (code) =>
      "public class Verify {\n" + code +
      "\n  public static void main(String[] a) throws Exception {\n" +
      "    System.out.println(verifyWebhook(a[0], a[1], a[2], a[3], " +
      "java.util.Base64.getDecoder().decode(a[4])));\n  }\n}\n",
    command: (file, args) => ["java", [file, ...args]],
  },
];

function has(tool: string): boolean {
  try {
    return new Deno.Command(tool, { args: ["version"], stdout: "null", stderr: "null" })
      .outputSync().code >= 0;
  } catch {
    return false;
  }
}

const b64 = (s: string) => btoa(String.fromCharCode(...new TextEncoder().encode(s)));

for (const ex of EXAMPLES) {
  Deno.test({
    name: `the ${ex.lang} verification example of docs/protocol.md accepts our signatures`,
    // In CI (tests/run.sh installs Go, Python and Java) a missing tool fails instead.
    ignore: !has(ex.tool) && !Deno.env.get("CI"),
    async fn() {
      const dir = await Deno.makeTempDir({ prefix: "nixmsg-webhook-doc-" });
      try {
        const file = join(dir, ex.file);
        await Deno.writeTextFile(file, ex.wrap(await block(ex.lang)));
        const secret = newWebhookSecret();
        const body = '{"v":1,"type":"msg","body":{"enc":"utf8","data":"温度 21.5 °C ✓"}}';
        const run = async (ts: number, sent: string): Promise<string> => {
          const [cmd, args] = ex.command(file, [
            secret,
            "msg_42",
            String(ts),
            sign(secret, "msg_42", ts, body),
            b64(sent),
          ]);
          const out = await new Deno.Command(cmd, {
            args,
            cwd: dir,
            env: { GO111MODULE: "off" },
          }).output();
          const text = new TextDecoder().decode(out.stdout).trim();
          assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
          return text;
        };
        const now = Math.floor(Date.now() / 1000);
        assert.equal(await run(now, body), "true", "a fresh signed request");
        assert.equal(await run(now, body + " "), "false", "a changed body");
        assert.equal(await run(now - 3600, body), "false", "an hour-old request");
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
