"""ctx.blockdb, ctx.rpc and ctx.meta against a real executor process: each wrapper must send
the one ctx.io request it documents (backend, op, params), in sync and async entries, and a
node's JSON-RPC error must arrive as JsonRpcError with the node's code.

Run: /usr/bin/python3 -m unittest discover -s executor-py/tests -t executor-py
"""

import unittest

from tests.test_executor import ExecutorTest, err, ok

BLOCK = {"number": "0x5", "hash": "0x" + "ab" * 32, "transactions": []}


class ChainApiTest(ExecutorTest):
    def request_of(self, src, args, answer=None):
        """request_of runs src, returns the requests of its first suspension and answers them."""
        self.ex.execute("c1", src, args)
        w = self.ex.next("c1")
        self.assertEqual(w["type"], "CallWaiting", w)
        self.ex.resume("c1", answer if answer is not None else [ok(None) for _ in w["requests"]])
        return w["requests"]

    def test_blockdb_block_defaults_to_the_input_chain_and_full_transactions(self):
        src = "def main(ctx, input):\n    return ctx.blockdb.block(input['blockNumber'])['hash']\n"
        reqs = self.request_of(src, {"chain": "ethereum", "blockNumber": 5}, [ok(BLOCK)])
        self.assertEqual(reqs, [{"kind": "io", "backend": "blockdb", "op": "block", "params": {"chain": "ethereum", "number": 5, "full": True}}])
        self.assertCompleted(self.ex.next("c1"), BLOCK["hash"])

    def test_blockdb_receipts_logs_head_with_explicit_chain(self):
        cases = [
            ("ctx.blockdb.receipts(7, chain='base')", {"backend": "blockdb", "op": "receipts", "params": {"chain": "base", "number": 7}}),
            ("ctx.blockdb.block('latest', full=False, chain='base')", {"backend": "blockdb", "op": "block", "params": {"chain": "base", "number": "latest", "full": False}}),
            (
                "ctx.blockdb.logs(1, 9, address='0xAB', topics=['0x01', None], chain='base')",
                {"backend": "blockdb", "op": "logs", "params": {"chain": "base", "fromBlock": 1, "toBlock": 9, "address": "0xAB", "topics": ["0x01", None]}},
            ),
            ("ctx.blockdb.logs(1, 2, chain='base')", {"backend": "blockdb", "op": "logs", "params": {"chain": "base", "fromBlock": 1, "toBlock": 2}}),
            ("ctx.blockdb.head(chain='base')", {"backend": "blockdb", "op": "head", "params": {"chain": "base"}}),
            ("ctx.rpc.call('eth_getBalance', '0x01', 'latest', chain='base')", {"backend": "rpc", "op": "call", "params": {"chain": "base", "method": "eth_getBalance", "params": ["0x01", "latest"]}}),
            ("ctx.meta.get_function('double')", {"backend": "meta", "op": "getFunction", "params": {"name": "double"}}),
            ("ctx.logical_types.decode_logs(['event A(uint256 a)'], ({'topics': []},))", {"backend": "logicalTypes", "op": "decodeLogs", "params": {"abi": ["event A(uint256 a)"], "logs": [{"topics": []}]}}),
            (
                "ctx.logical_types.logs_of(7, ['event A(uint256 a)'], events='A', address='0xAB', chain='base')",
                {"backend": "logicalTypes", "op": "logsOf", "params": {"chain": "base", "fromBlock": 7, "toBlock": 7, "abi": ["event A(uint256 a)"], "events": ["A"], "address": "0xAB"}},
            ),
            ("ctx.logical_types.logs_of(7, [], to_block=9, chain='base')", {"backend": "logicalTypes", "op": "logsOf", "params": {"chain": "base", "fromBlock": 7, "toBlock": 9, "abi": []}}),
            ("ctx.logical_types.decode_call([], '0xa9059cbb')", {"backend": "logicalTypes", "op": "decodeCall", "params": {"abi": [], "input": "0xa9059cbb"}}),
            ("ctx.logical_types.decode_result([], 'balanceOf', '0x')", {"backend": "logicalTypes", "op": "decodeResult", "params": {"abi": [], "function": "balanceOf", "output": "0x"}}),
            ("ctx.logical_types.event_signature('Transfer(address,address,uint256)')", {"backend": "logicalTypes", "op": "eventSignature", "params": {"text": "Transfer(address,address,uint256)"}}),
            ("ctx.logical_types.function_selector('transfer(address,uint256)')", {"backend": "logicalTypes", "op": "functionSelector", "params": {"text": "transfer(address,uint256)"}}),
            ("ctx.meta.list_functions()", {"backend": "meta", "op": "listFunctions", "params": {}}),
        ]
        for expr, want in cases:
            with self.subTest(expr=expr):
                reqs = self.request_of(f"def main(ctx, input):\n    return {expr}\n", None)
                self.assertEqual(reqs, [{"kind": "io", **want}])
                self.assertCompleted(self.ex.next("c1"), None)

    def test_async_entry_awaits_the_wrappers(self):
        src = "async def main(ctx, input):\n    b = await ctx.blockdb.block(input['blockNumber'], full=False)\n    return b['number']\n"
        reqs = self.request_of(src, {"chain": "eth", "blockNumber": 5}, [ok(BLOCK)])
        self.assertEqual(reqs[0]["params"], {"chain": "eth", "number": 5, "full": False})
        self.assertCompleted(self.ex.next("c1"), "0x5")

    def test_no_chain_anywhere_is_a_type_error_naming_chain(self):
        e = self.assertFailed(self.ex.run("c1", "def main(ctx, input):\n    return ctx.blockdb.block(1)\n", 3), "USER_ERROR")
        self.assertIn("chain= is required", e["message"])

    def test_json_rpc_error_carries_the_node_code_and_is_a_backend_error(self):
        src = (
            "from blockx_executor import BackendError, JsonRpcError\n"
            "def main(ctx, input):\n"
            "    try:\n"
            "        ctx.rpc.call('eth_call', {}, 'latest')\n"
            "    except JsonRpcError as e:\n"
            "        return [e.code, e.type, isinstance(e, BackendError), e.message]\n"
        )
        message = "rpc.call: JSON-RPC error -32000 from chain ethereum node http://127.0.0.1:8545: execution reverted"
        self.request_of(src, {"chain": "ethereum"}, [err("JsonRpcError", message)])
        self.assertCompleted(self.ex.next("c1"), [-32000, "JsonRpcError", True, message])


if __name__ == "__main__":
    unittest.main()
