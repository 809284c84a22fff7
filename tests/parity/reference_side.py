"""The reference's side of the parity comparison: run by a Python that has torch and Qwen's ``qwen-tts``
(never by narrate's: make_reference.py starts it). Imports nothing from narrate but the torch peer's
torchaudio stand-in (worker/bench/torch_peer.py, itself free of narrate)::

    PYTHON reference_side.py REQUEST.json OUT.npz

REQUEST: ``checkpoint`` (in the layout qwen-tts loads), ``codes`` (a .npy of (frames, 16) codes),
``voice`` (a .npy of 24 kHz float32 samples), ``sentences``, ``frames``, ``repetition_penalties``.

OUT holds, all float32 or int32:
  codec_audio         the reference's decode of ``codes`` (its tokenizer's ``decode``, as generate_voice_clone
                      decodes), every sample
  xvector             ``extract_speaker_embedding`` of the voice (the speaker encoder, on the reference's mel)
  codes_p{P}_single_{i} / codes_p{P}_batch_{i}
                      greedy codes (do_sample and subtalker_dosample off) of sentence i with repetition
                      penalty P, alone and as row i of one call with every sentence, cloned in x-vector mode
                      with ``xvector``, the whole sentence in the prefill (``non_streaming_mode=True``)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "worker" / "bench"))
from torch_peer import _stub_torchaudio  # noqa: E402


def main(request_path: str, out_path: str) -> int:
    request = json.loads(Path(request_path).read_text())
    _stub_torchaudio()
    import torch
    from qwen_tts import Qwen3TTSModel

    torch.manual_seed(0)
    tts = Qwen3TTSModel.from_pretrained(request["checkpoint"], dtype=torch.float32, local_files_only=True)
    out: dict[str, np.ndarray] = {}

    codes = np.load(request["codes"])
    with torch.no_grad():
        wavs, _ = tts.model.speech_tokenizer.decode([{"audio_codes": torch.from_numpy(codes.astype(np.int64))}])
    out["codec_audio"] = np.asarray(wavs[0], dtype=np.float32)

    voice = np.load(request["voice"]).astype(np.float32)
    with torch.no_grad():
        out["xvector"] = tts.model.extract_speaker_embedding(voice, 24000).float().numpy().reshape(-1)

    items = tts.create_voice_clone_prompt(ref_audio=(voice, 24000), x_vector_only_mode=True)
    frames = int(request["frames"])
    sentences = list(request["sentences"])
    for penalty in request["repetition_penalties"]:
        calls = [("single", [i]) for i in range(len(sentences))] + [("batch", list(range(len(sentences))))]
        for kind, idx in calls:
            texts = [sentences[i] for i in idx]
            prompt = tts._prompt_items_to_voice_clone_prompt(items * len(texts))
            input_ids = tts._tokenize_texts([tts._build_assistant_text(t) for t in texts])
            with torch.no_grad():
                made, _ = tts.model.generate(
                    input_ids=input_ids,
                    voice_clone_prompt=prompt,
                    languages=["Auto"] * len(texts),
                    non_streaming_mode=True,
                    max_new_tokens=frames + 1,  # the last first-codebook token gets no residual codes
                    do_sample=False,
                    subtalker_dosample=False,
                    repetition_penalty=float(penalty),
                )
            for i, c in zip(idx, made, strict=True):
                out[f"codes_p{penalty}_{kind}_{i}"] = c.cpu().numpy().astype(np.int32)[:frames]
    np.savez(out_path, **out)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
