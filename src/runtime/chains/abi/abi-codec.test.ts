import { describe, expect, test } from "bun:test";
import {
  AbiError,
  decodeCall,
  decodeLog,
  decodeLogs,
  decodeResult,
  eventSignature,
  functionSelector,
  MAX_ABI_ITEMS,
  parseAbiInput,
  toJsonText,
} from "./abi-codec";

// Integers come back as viem gives them: a number up to 48 bits, a bigint above (both are written as
// exact digits to Python). Known vectors: the Keccak-256 values below are Ethereum's own (ERC-20's Transfer and Approval, Uniswap V2's
// Sync and Swap, keccak256("hello")), the EIP-55 addresses are the EIP's examples, and the call encoding
// is the worked example of the Solidity ABI specification. Every other encoding is assembled word by word.
const TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const word = (hex: string | bigint | number) => (typeof hex === "string" ? hex.replace(/^0x/, "") : hex.toString(16)).padStart(64, "0");
const addrTopic = (a: string) => `0x${word(a.toLowerCase())}`;
const UINT256_MAX = (1n << 256n) - 1n;
const EIP55 = ["0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359", "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB", "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb"];

const ERC20 = parseAbiInput([
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "event Approval(address indexed owner, address indexed spender, uint256 value)",
  "function transfer(address to, uint256 amount) returns (bool)",
  "function balanceOf(address owner) view returns (uint256)",
]);

describe("signatures and selectors (Keccak-256)", () => {
  test("event topic0s are Ethereum's, from a signature or a human-readable declaration", () => {
    expect(eventSignature("Transfer(address,address,uint256)")).toBe(TRANSFER);
    expect(eventSignature("event Transfer(address indexed from, address indexed to, uint256 value)")).toBe(TRANSFER);
    expect(eventSignature("Approval(address,address,uint256)")).toBe("0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925");
    expect(eventSignature("Sync(uint112,uint112)")).toBe("0x1c411e9a96e071241c2f21f7726b17ae89e3cab4c78be50e062b03a9fffbbad1");
    expect(eventSignature("Swap(address,uint256,uint256,uint256,uint256,address)")).toBe("0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822");
  });

  test("function selectors are the first four bytes", () => {
    expect(functionSelector("transfer(address,uint256)")).toBe("0xa9059cbb");
    expect(functionSelector("balanceOf(address)")).toBe("0x70a08231");
    expect(functionSelector("function approve(address spender, uint256 value) returns (bool)")).toBe("0x095ea7b3");
    expect(functionSelector("f(uint256,uint32[],bytes10,bytes)")).toBe("0x8be65246");
  });

  test("a text that is no signature is an InvalidParams error", () => {
    expect(() => eventSignature("")).toThrow(AbiError);
    expect(() => functionSelector(42)).toThrow("functionSelector");
  });
});

describe("decodeLog", () => {
  test("an ERC-20 Transfer: indexed addresses from topics (EIP-55), the uint256 from data, exact at the maximum", () => {
    const from = EIP55[0]!;
    const to = EIP55[1]!;
    const d = decodeLog(ERC20, {
      address: EIP55[2]!.toLowerCase(),
      topics: [TRANSFER, addrTopic(from), addrTopic(to)],
      data: `0x${word(UINT256_MAX)}`,
      blockNumber: "0x10",
      transactionHash: `0x${"ab".repeat(32)}`,
      transactionIndex: "0x2",
      logIndex: "0x7",
    });
    expect(d).toEqual({
      event: "Transfer",
      signature: "Transfer(address,address,uint256)",
      address: EIP55[2]!,
      args: { from, to, value: UINT256_MAX },
      blockNumber: 16,
      transactionHash: `0x${"ab".repeat(32)}`,
      transactionIndex: 2,
      logIndex: 7,
      error: null,
    });
    expect(toJsonText(d.args)).toContain(`"value":${UINT256_MAX.toString()}`);
  });

  test("int256 negatives and minimum, int8, bool and bytes32 in data", () => {
    const abi = parseAbiInput(["event Moved(int256 a, int256 b, int8 c, bool ok, bytes32 tag)"]);
    const min = -(1n << 255n);
    const data = `0x${word("f".repeat(64))}${word("8" + "0".repeat(63))}${word("f".repeat(62) + "fe")}${word(1)}${"12".repeat(32)}`;
    const d = decodeLog(abi, { address: `0x${"0".repeat(40)}`, topics: [eventSignature("Moved(int256,int256,int8,bool,bytes32)")], data });
    expect(d.error).toBeNull();
    expect(d.args).toEqual({ a: -1n, b: min, c: -2, ok: true, tag: `0x${"12".repeat(32)}` });
    expect(toJsonText(d.args)).toBe(`{"a":-1,"b":${min.toString()},"c":-2,"ok":true,"tag":"0x${"12".repeat(32)}"}`);
  });

  test("dynamic types in data: string, bytes and uint256[]; an indexed string is its Keccak-256 hash", () => {
    const abi = parseAbiInput(["event Note(string indexed key, string text, bytes blob, uint256[] ids)"]);
    const hello = Buffer.from("hello, world").toString("hex");
    const data =
      "0x" +
      word(0x60) + word(0xa0) + word(0xe0) + // offsets of text, blob, ids
      word(12) + hello.padEnd(64, "0") + // text
      word(3) + "010203".padEnd(64, "0") + // blob
      word(2) + word(5) + word(UINT256_MAX); // ids
    const keyHash = "0x1c8aff950685c2ed4bc3174f3472287b56d9517b9c948127319a09a7a36deac8"; // keccak256("hello")
    const d = decodeLog(abi, { address: `0x${"1".repeat(40)}`, topics: [eventSignature("Note(string,string,bytes,uint256[])"), keyHash], data });
    expect(d.error).toBeNull();
    expect(d.args).toEqual({ key: keyHash, text: "hello, world", blob: "0x010203", ids: [5n, UINT256_MAX] });
  });

  test("tuples (named: a record; unnamed: a list) and arrays of tuples, nested", () => {
    const abi = parseAbiInput(["event Filled((address maker, uint256 amount) order, (uint8, bool)[] legs, uint256 indexed id)"]);
    const maker = EIP55[3]!;
    const data =
      "0x" +
      word(maker.toLowerCase()) + word(1000) + // order (static tuple, inline)
      word(0x60) + // offset of legs
      word(2) + word(7) + word(1) + word(9) + word(0); // legs: [(7, true), (9, false)]
    const d = decodeLog(abi, { address: `0x${"2".repeat(40)}`, topics: [eventSignature("Filled((address,uint256),(uint8,bool)[],uint256)"), `0x${word(42)}`], data });
    expect(d.error).toBeNull();
    expect(d.args).toEqual({ order: { maker, amount: 1000n }, legs: [[7, true], [9, false]], id: 42n });
  });

  test("an anonymous event has no topic0 and is matched by its shape", () => {
    // Human-readable lines cannot say "anonymous": the JSON ABI form can.
    const abi = parseAbiInput([{ type: "event", name: "Ping", anonymous: true, inputs: [{ name: "who", type: "address", indexed: true }, { name: "n", type: "uint256" }] }]);
    const d = decodeLog(abi, { address: `0x${"3".repeat(40)}`, topics: [addrTopic(EIP55[0]!)], data: `0x${word(5)}` });
    expect(d).toMatchObject({ event: "Ping", args: { who: EIP55[0]!, n: 5n }, error: null });
    const bad = decodeLog(abi, { address: `0x${"3".repeat(40)}`, topics: [], data: `0x${word(5)}` });
    expect(bad.error).toContain("Ping(address,uint256) (anonymous): Ping(address,uint256) has 1 indexed argument(s), so 1 topics; the log has 0");
  });

  test("events sharing a topic0: ERC-20 Transfer (3 topics) and ERC-721 Transfer (4 topics) each find their own", () => {
    const abi = parseAbiInput([
      { type: "event", name: "Transfer", inputs: [{ name: "from", type: "address", indexed: true }, { name: "to", type: "address", indexed: true }, { name: "value", type: "uint256" }] },
      { type: "event", name: "Transfer", inputs: [{ name: "from", type: "address", indexed: true }, { name: "to", type: "address", indexed: true }, { name: "tokenId", type: "uint256", indexed: true }] },
    ]);
    const t = [TRANSFER, addrTopic(EIP55[0]!), addrTopic(EIP55[1]!)];
    expect(decodeLog(abi, { address: EIP55[2]!, topics: t, data: `0x${word(3)}` }).args).toEqual({ from: EIP55[0]!, to: EIP55[1]!, value: 3n });
    expect(decodeLog(abi, { address: EIP55[2]!, topics: [...t, `0x${word(99)}`], data: "0x" }).args).toEqual({ from: EIP55[0]!, to: EIP55[1]!, tokenId: 99n });
  });

  test("an undecodable log is reported with its reason, the others decode", () => {
    const good = { address: EIP55[2]!, topics: [TRANSFER, addrTopic(EIP55[0]!), addrTopic(EIP55[1]!)], data: `0x${word(1)}`, logIndex: "0x0" };
    const unknown = { address: EIP55[2]!, topics: [eventSignature("Sync(uint112,uint112)")], data: `0x${word(1)}${word(2)}`, logIndex: "0x1" };
    const nft = { ...good, topics: [...good.topics, `0x${word(1)}`], data: "0x", logIndex: "0x2" };
    const short = { ...good, data: "0x01", logIndex: "0x3" };
    const junk = { address: 7, topics: "x", data: "0x" };
    const out = decodeLogs(ERC20, [good, unknown, nft, short, junk]);
    expect(out.map((d) => d.event)).toEqual(["Transfer", null, null, null, null]);
    expect(out[1]!.error).toBe("no event of the ABI has topic0 0x1c411e9a96e071241c2f21f7726b17ae89e3cab4c78be50e062b03a9fffbbad1");
    expect(out[1]!.logIndex).toBe(1);
    expect(out[2]!.error).toContain("has 2 indexed argument(s), so 3 topics; the log has 4");
    expect(out[3]!.error).toContain("Transfer(address,address,uint256)");
    expect(out[4]!.error).toContain("topics must be a list");
  });
});

describe("calls and results", () => {
  test("the Solidity ABI specification's example call decodes to its arguments", () => {
    const abi = parseAbiInput(["function f(uint256 a, uint32[] b, bytes10 c, bytes d)"]);
    const input =
      "0x8be65246" +
      "0000000000000000000000000000000000000000000000000000000000000123" +
      "0000000000000000000000000000000000000000000000000000000000000080" +
      "3132333435363738393000000000000000000000000000000000000000000000" +
      "00000000000000000000000000000000000000000000000000000000000000e0" +
      "0000000000000000000000000000000000000000000000000000000000000002" +
      "0000000000000000000000000000000000000000000000000000000000000456" +
      "0000000000000000000000000000000000000000000000000000000000000789" +
      "000000000000000000000000000000000000000000000000000000000000000d" +
      "48656c6c6f2c20776f726c642100000000000000000000000000000000000000";
    expect(decodeCall(abi, input)).toEqual({
      function: "f",
      signature: "f(uint256,uint32[],bytes10,bytes)",
      selector: "0x8be65246",
      args: { a: 0x123n, b: [0x456, 0x789], c: `0x${Buffer.from("1234567890").toString("hex")}`, d: `0x${Buffer.from("Hello, world!").toString("hex")}` },
    });
  });

  test("an ERC-20 transfer input; an unknown selector and short data are DecodeFailed", () => {
    const input = `0xa9059cbb${word(EIP55[1]!.toLowerCase())}${word(UINT256_MAX)}`;
    expect(decodeCall(ERC20, input).args).toEqual({ to: EIP55[1]!, amount: UINT256_MAX });
    expect(() => decodeCall(ERC20, "0xdeadbeef")).toThrow("no function of the ABI has selector 0xdeadbeef");
    expect(() => decodeCall(ERC20, "0xa9059cbb00")).toThrow(AbiError);
    expect(() => decodeCall(ERC20, "0x12")).toThrow("no 4-byte function selector");
  });

  test("results: one output is its value, named outputs a record, unnamed a list", () => {
    expect(decodeResult(ERC20, "balanceOf", `0x${word(UINT256_MAX)}`)).toBe(UINT256_MAX);
    const abi = parseAbiInput([
      "function getReserves() view returns (uint112 reserve0, uint112 reserve1, uint32 blockTimestampLast)",
      "function pair() view returns (address, int256)",
      "function f(uint256) returns (bool)",
      "function f(address) returns (bool)",
    ]);
    expect(decodeResult(abi, "getReserves", `0x${word(10)}${word((1n << 112n) - 1n)}${word(77)}`)).toEqual({ reserve0: 10n, reserve1: (1n << 112n) - 1n, blockTimestampLast: 77 });
    expect(decodeResult(abi, "pair", `0x${word(EIP55[0]!.toLowerCase())}${word("f".repeat(64))}`)).toEqual([EIP55[0]!, -1n]);
    expect(() => decodeResult(abi, "f", `0x${word(1)}`)).toThrow("overloaded");
    expect(decodeResult(abi, "f(address)", `0x${word(1)}`)).toBe(true);
    expect(() => decodeResult(abi, "nope", "0x")).toThrow("no function");
  });
});

describe("ABI input and bounds", () => {
  test("a JSON ABI (solc's form) and human-readable lines decode alike", () => {
    const json = parseAbiInput([
      { type: "event", name: "Transfer", anonymous: false, inputs: [{ indexed: true, name: "from", type: "address", internalType: "address" }, { indexed: true, name: "to", type: "address" }, { indexed: false, name: "value", type: "uint256" }] },
    ]);
    const log = { address: EIP55[2]!, topics: [TRANSFER, addrTopic(EIP55[0]!), addrTopic(EIP55[1]!)], data: `0x${word(5)}` };
    expect(decodeLog(json, log)).toEqual(decodeLog(ERC20, log));
  });

  test("bad ABIs and oversized inputs fail with a message naming the problem", () => {
    expect(() => parseAbiInput({})).toThrow("abi must be a list");
    expect(() => parseAbiInput([{ type: "event", name: "X", inputs: [{ type: "uint257" }] }])).toThrow("abi[0]");
    expect(() => parseAbiInput(["event Broken(uint256"])).toThrow(AbiError);
    expect(() => parseAbiInput(new Array(MAX_ABI_ITEMS + 1).fill("event A(uint256 a)"))).toThrow(`at most ${MAX_ABI_ITEMS} items`);
    expect(() => decodeLogs(ERC20, "nope")).toThrow("logs must be a list");
  });
});
