from __future__ import annotations

import os
import signal
import subprocess
import sys
import unittest
from pathlib import Path

from tests import support
from tests.support import KEY, SRC, URL, needs_server

from taskhook import TaskhookClient

EXAMPLE = str(Path(__file__).resolve().parent.parent / "examples" / "review_worker.py")
QUESTION = "Please send the code to review: a unified diff (git diff) or a source file."
DIFF = "\n".join(
    [
        "diff --git a/src/pay.ts b/src/pay.ts",
        "index 1111111..2222222 100644",
        "--- a/src/pay.ts",
        "+++ b/src/pay.ts",
        "@@ -10,4 +10,7 @@ export function pay() {",
        "   const amount = total();",
        "+  console.log('paying', amount);",
        "   // charge the card",
        "+  // TODO: handle refunds",
        "+  const key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';",
        "   return charge(amount);",
        " }",
        "",
    ]
)


@needs_server
class ReviewWorkerExampleTest(unittest.TestCase):
    def test_without_configuration_it_exits_2(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TASKHOOK_")}
        done = subprocess.run([sys.executable, EXAMPLE], env={**env, "PYTHONPATH": SRC}, capture_output=True)
        self.assertEqual(done.returncode, 2)

    def test_asks_for_the_code_then_reviews_the_reply(self) -> None:
        agent = support.create_agent()
        env = {**os.environ, "PYTHONPATH": SRC, "TASKHOOK_URL": URL, "TASKHOOK_API_KEY": KEY, "TASKHOOK_AGENT_ID": agent}
        child = subprocess.Popen([sys.executable, EXAMPLE], env=env, stdout=subprocess.DEVNULL)
        try:
            client = TaskhookClient(URL, KEY)
            task_id = client.submit(agent, "Please review my change")["task_id"]
            waiting = client.wait_for(agent, task_id, until=["awaiting_input"], timeout=20)
            self.assertEqual(waiting["input_request"]["message"], QUESTION)
            client.message(agent, task_id, DIFF)
            done = client.wait_for(agent, task_id, timeout=20)
            self.assertEqual(done["status"], "completed")
            self.assertEqual(
                done["result"]["summary"], "Reviewed 1 file(s): 3 finding(s) (1 error, 1 warning, 1 info)."
            )
            self.assertEqual(
                [(f["line"], f["severity"]) for f in done["result"]["findings"]],
                [(11, "warning"), (13, "info"), (14, "error")],
            )
        finally:
            child.send_signal(signal.SIGTERM)
            self.assertEqual(child.wait(timeout=20), 0)


if __name__ == "__main__":
    unittest.main()
