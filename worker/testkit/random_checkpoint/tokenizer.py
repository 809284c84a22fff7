"""The text tokenizer of a random-weight checkpoint: a byte-level BPE trained here on common
English words, with the Qwen2 pre-tokenizer and the 33 Qwen special tokens at the ids the
checkpoint's config.json names (151643.. in the real sizes), written as tokenizer.json and
tokenizer_config.json like the published Qwen3-TTS tokenizer. Plain English therefore gets
realistic prefill lengths (about one token a word); other languages do not."""

from __future__ import annotations

import json
import random
from pathlib import Path

from narrate.worker.testkit.random_checkpoint.configs import QWEN_SPECIAL_TOKENS
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

# The Qwen2 pre-tokenizer regex of the published tokenizer.json.
QWEN2_PRETOKENIZE_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
BPE_VOCAB = 3000  # BPE tokens learned; the ids up to the special tokens are unreachable filler

# Training text: common English words (so everyday English tokenizes to roughly one token a
# word, like the real vocabulary), digits, punctuation and the chat-template words.
_WORDS = """
the of and to a in is it you that he was for on are with as I his they be at
one have this from or had by hot word but what some we can out other were all
there when up use your how said an each she which do their time if will way
about many then them write would like so these her long make thing see him two
has look more day could go come did number sound no most people my over know
water than call first who may down side been now find any new work part take
get place made live where after back little only round man year came show
every good me give our under name very through just form sentence great think
say help low line differ turn cause much mean before move right boy old too
same tell does set three want air well also play small end put home read hand
port large spell add even land here must big high such follow act why ask men
change went light kind off need house picture try us again animal point mother
world near build self earth father head stand own page should country found
answer school grow study still learn plant cover food sun four between state
keep eye never last let thought city tree cross farm hard start might story saw
far sea draw left late run don't while press close night real life few north
open seem together next white children begin got walk example ease paper group
always music those both mark often letter until mile river car feet care second
book carry took science eat room friend began idea fish mountain stop once base
hear horse cut sure watch color face wood main enough plain girl usual young
ready above ever red list though feel talk bird soon body dog family direct
pose leave song measure door product black short numeral class wind question
happen complete ship area half rock order fire south problem piece told knew
pass since top whole king space heard best hour better true during hundred five
remember step early hold west ground interest reach fast verb sing listen six
table travel less morning ten simple several vowel toward war lay against
pattern slow center love person money serve appear road map rain rule govern
pull cold notice voice unit power town fine certain fly fall lead cry dark
machine note wait plan figure star box noun field rest correct able pound done
beauty drive stood contain front teach week final gave green oh quick develop
ocean warm free minute strong special mind behind clear tail produce fact
street inch multiply nothing course stay wheel full force blue object decide
surface deep moon island foot system busy test record boat common gold possible
plane stead dry wonder laugh thousand ago ran check game shape equate miss
brought heat snow tire bring yes distant fill east paint language among hello
today weather speech model brown fox jumps lazy morning meeting please thanks
welcome message customer service order delivery tomorrow yesterday minutes
hours thank sorry okay assistant system user audio text voice clone reference
""".split()
_CHAT_WORDS = ["assistant", "user", "system"]


def _corpus(n_sentences: int = 6000, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n_sentences):
        n = rng.randint(3, 16)
        words = [rng.choice(_WORDS) for _ in range(n)]
        s = " ".join(words)
        s = s[0].upper() + s[1:] + rng.choice([".", ".", "!", "?", ","])
        if rng.random() < 0.1:
            s += " " + str(rng.randint(0, 9999))
        out.append(s)
    # Chat-template framing, so "assistant" etc. become single tokens.
    for i in range(600):
        w = _CHAT_WORDS[i % 3]
        out.append(f"{w}\n{out[i]}\n")
    return out


def write_tokenizer(out_dir: Path, special_base: int) -> tuple[int, int | None]:
    """Train the BPE and write tokenizer.json and tokenizer_config.json into `out_dir`. Ids
    0..n-1 are BPE tokens, n..special_base-1 unreachable filler entries, and the 33 Qwen special
    tokens follow at special_base. Returns (n, the id of "assistant")."""
    bpe_vocab = min(BPE_VOCAB, special_base)
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()  # no options: the ByteLevel decoder ignores any keyword given to it
    trainer = trainers.BpeTrainer(
        vocab_size=bpe_vocab,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(_corpus(), trainer)
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    n_bpe = len(vocab)
    if n_bpe > special_base:
        raise RuntimeError("BPE vocabulary overlaps the special-token ids")
    # The tokenizers library gives added tokens the ids right after the model vocabulary, so
    # fill the gap with entries no merge can ever produce.
    for i in range(n_bpe, special_base):
        vocab[f"<|reserved_{i}|>"] = i
    spec["added_tokens"] = [
        {
            "id": special_base + i,
            "content": t,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, t in enumerate(QWEN_SPECIAL_TOKENS)
    ]
    text = json.dumps(spec, ensure_ascii=False)
    Tokenizer.from_str(text)  # must parse
    (out_dir / "tokenizer.json").write_text(text, encoding="utf-8")
    tok_cfg = {
        # The class and fields of the published tokenizer_config.json; the fast tokenizer is
        # built from tokenizer.json.
        "tokenizer_class": "Qwen2Tokenizer",
        "add_bos_token": False,
        "add_prefix_space": False,
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 131072,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "unk_token": None,
        "added_tokens_decoder": {
            str(special_base + i): {
                "content": t,
                "lstrip": False,
                "normalized": False,
                "rstrip": False,
                "single_word": False,
                "special": True,
            }
            for i, t in enumerate(QWEN_SPECIAL_TOKENS)
        },
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2), encoding="utf-8")
    assistant_id = vocab.get("assistant")
    return n_bpe, assistant_id
