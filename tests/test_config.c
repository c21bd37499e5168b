/*
 * test_config.c - config.json and the sentence-transformers files
 * (modules.json, the Pooling module, sentence_bert_config.json) as ext/models/model.c
 * reads them: defaults, values, and refusals that name the key.
 */
#include "test.h"
#include "checkpoint_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void config_json(void)
{
    bert_config cfg;
    char *err = NULL;
    tm_dir d = tm_case_dir("config");
    const char *dir = d.path;

    t_case("config: a missing config.json");
    T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == -1 && tm_contains(err, "config.json"), "got: %s", err ? err : "success");
    free(err);

    t_case("config: model_type bert alone takes BertConfig's defaults");
    tm_write_text(dir, "config.json", "{\"model_type\": \"bert\"}");
    if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "rejected: %s", err ? err : "?"))
        T_CHECK(cfg.vocab_size == 30522 && cfg.hidden_size == 768 && cfg.num_layers == 12 && cfg.num_heads == 12 &&
                cfg.intermediate_size == 3072 && cfg.max_position_embeddings == 512 && cfg.type_vocab_size == 2 &&
                cfg.layer_norm_eps == 1e-12f && cfg.hidden_act == BERT_ACT_GELU, "defaults");

    t_case("config: no model_type, but all the sizes");
    tm_write_text(dir, "config.json",
               "{\"vocab_size\": 100, \"hidden_size\": 64, \"num_hidden_layers\": 3, \"num_attention_heads\": 4,"
               " \"intermediate_size\": 128, \"max_position_embeddings\": 32, \"layer_norm_eps\": 1e-5,"
               " \"hidden_act\": \"gelu_new\"}");
    if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "rejected: %s", err ? err : "?"))
        T_CHECK(cfg.vocab_size == 100 && cfg.hidden_size == 64 && cfg.num_layers == 3 && cfg.type_vocab_size == 2 &&
                cfg.layer_norm_eps == 1e-5f && cfg.hidden_act == BERT_ACT_GELU_TANH, "values");

    t_case("config: the families, their positions and MPNet's buckets");
    static const struct {
        const char *json;
        bert_family family;
        int pad, offset, buckets, types;
    } family[] = {
        {"{\"model_type\": \"bert\"}", BERT_FAMILY_BERT, -1, 0, 0, 2},
        {"{\"model_type\": \"roberta\", \"max_position_embeddings\": 514, \"type_vocab_size\": 1}",
         BERT_FAMILY_ROBERTA, 1, 2, 0, 1},
        {"{\"model_type\": \"xlm-roberta\", \"pad_token_id\": 3, \"max_position_embeddings\": 514}",
         BERT_FAMILY_XLM_ROBERTA, 3, 4, 0, 2},
        /* MPNet's padding_idx is 1 whatever pad_token_id says; no segments. */
        {"{\"model_type\": \"mpnet\", \"pad_token_id\": 5, \"relative_attention_num_buckets\": 40}",
         BERT_FAMILY_MPNET, 1, 2, 40, 0},
        {"{\"model_type\": \"mpnet\"}", BERT_FAMILY_MPNET, 1, 2, 32, 0},
        /* ELECTRA counts positions from 0 whatever pad_token_id says, as BERT. */
        {"{\"model_type\": \"electra\", \"pad_token_id\": 0}", BERT_FAMILY_ELECTRA, -1, 0, 0, 2},
        {"{\"model_type\": \"modernbert\", \"pad_token_id\": 50283}", BERT_FAMILY_MODERNBERT, -1, 0, 0, 0},
        /* DeBERTa's type_vocab_size is 0 unless config.json says otherwise. */
        {"{\"model_type\": \"deberta-v2\", \"pad_token_id\": 0}", BERT_FAMILY_DEBERTA_V2, -1, 0, 0, 0},
        /* JinaBERT: model_type "bert", told by its ALiBi positions. */
        {"{\"model_type\": \"bert\", \"position_embedding_type\": \"alibi\", \"max_position_embeddings\": 8192}",
         BERT_FAMILY_JINA_BERT, -1, 0, 0, 2},
        {"{\"model_type\": \"bert\", \"position_embedding_type\": \"absolute\"}", BERT_FAMILY_BERT, -1, 0, 0, 2},
    };
    for (size_t i = 0; i < sizeof family / sizeof *family; i++) {
        tm_write_text(dir, "config.json", family[i].json);
        if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "%s rejected: %s", family[i].json, err ? err : "?"))
            T_CHECK(cfg.family == family[i].family && cfg.pad_id == family[i].pad &&
                        cfg.position_offset == family[i].offset && cfg.relative_buckets == family[i].buckets &&
                        cfg.type_vocab_size == family[i].types &&
                        bert_config_max_tokens(&cfg) == cfg.max_position_embeddings - family[i].offset,
                    "%s: family %d pad %d offset %d buckets %d types %d", family[i].json, (int)cfg.family, cfg.pad_id,
                    cfg.position_offset, cfg.relative_buckets, cfg.type_vocab_size);
        free(err);
        err = NULL;
    }
    t_case("config: DistilBERT's sinusoidal_pos_embds (false when absent)");
    static const struct { const char *json; int sinusoidal; } sinusoid[] = {
        {"{\"model_type\": \"distilbert\"}", 0},
        {"{\"model_type\": \"distilbert\", \"sinusoidal_pos_embds\": false}", 0},
        {"{\"model_type\": \"distilbert\", \"sinusoidal_pos_embds\": true}", 1},
    };
    for (size_t i = 0; i < sizeof sinusoid / sizeof *sinusoid; i++) {
        tm_write_text(dir, "config.json", sinusoid[i].json);
        if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "%s rejected: %s", sinusoid[i].json, err ? err : "?"))
            T_CHECK(cfg.family == BERT_FAMILY_DISTILBERT && cfg.sinusoidal_positions == sinusoid[i].sinusoidal,
                    "%s: sinusoidal %d", sinusoid[i].json, cfg.sinusoidal_positions);
        free(err);
        err = NULL;
    }
    T_CHECK(strcmp(bert_family_name(BERT_FAMILY_XLM_ROBERTA), "xlm-roberta") == 0, "family name");
    T_CHECK(strcmp(bert_family_name(BERT_FAMILY_JINA_BERT), "bert") == 0, "JinaBERT's model_type");

    t_case("config: JinaBERT's gated MLP (feed_forward_type, geglu by default)");
    static const struct { const char *json; bert_activation act; } glu[] = {
        {"{\"model_type\": \"bert\", \"position_embedding_type\": \"alibi\"}", BERT_ACT_GELU},
        {"{\"model_type\": \"bert\", \"position_embedding_type\": \"alibi\", \"feed_forward_type\": \"geglu\", "
         "\"hidden_act\": \"relu\"}", BERT_ACT_GELU},
        {"{\"model_type\": \"bert\", \"position_embedding_type\": \"alibi\", \"feed_forward_type\": \"reglu\"}",
         BERT_ACT_RELU},
    };
    for (size_t i = 0; i < sizeof glu / sizeof *glu; i++) {
        tm_write_text(dir, "config.json", glu[i].json);
        if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "%s rejected: %s", glu[i].json, err ? err : "?"))
            T_CHECK(cfg.family == BERT_FAMILY_JINA_BERT && cfg.fam.glu_act == glu[i].act, "%s: family %d act %d",
                    glu[i].json, (int)cfg.family, (int)cfg.fam.glu_act);
        free(err);
        err = NULL;
    }

    t_case("config: nomic-bert's GPT-2 names, padded vocabulary, gated MLP width and rotary settings; gte's rotary");
    tm_write_text(dir, "config.json",
                  "{\"model_type\": \"nomic_bert\", \"vocab_size\": 30522, \"pad_vocab_size_multiple\": 64, "
                  "\"n_embd\": 96, \"n_head\": 6, \"n_layer\": 3, \"n_inner\": null, \"n_positions\": 8192, "
                  "\"activation_function\": \"swiglu\", \"rotary_emb_fraction\": 0.5, \"rotary_emb_base\": 1000, "
                  "\"rotary_emb_interleaved\": true, \"rotary_scaling_factor\": 2.0, \"layer_norm_epsilon\": 1e-12}");
    if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "nomic_bert rejected: %s", err ? err : "?"))
        /* n_inner null: int(8 * 96 / 3) = 256, already a multiple of 256; 30522 rows padded to 30528. */
        T_CHECK(cfg.family == BERT_FAMILY_NOMIC_BERT && cfg.vocab_size == 30528 && cfg.hidden_size == 96 &&
                    cfg.num_heads == 6 && cfg.num_layers == 3 && cfg.intermediate_size == 256 &&
                    cfg.max_position_embeddings == 8192 && cfg.type_vocab_size == 2 && cfg.fam.rotary_dim == 8 &&
                    cfg.fam.rotary_interleaved && cfg.fam.rope_theta == 1000 && cfg.fam.dynamic_ntk_factor == 2.0 &&
                    cfg.fam.max_trained == 2048 && cfg.fam.glu_act == BERT_ACT_SILU && cfg.layer_norm_eps == 1e-12f,
                "nomic_bert: vocab %d inner %d rotary_dim %d", cfg.vocab_size, cfg.intermediate_size,
                cfg.fam.rotary_dim);
    free(err);
    err = NULL;
    tm_write_text(dir, "config.json", "{\"model_type\": \"nomic_bert\", \"n_embd\": 64, \"n_head\": 4, "
                                      "\"n_inner\": 300, \"activation_function\": \"glu\", \"rotary_emb_fraction\": 1}");
    if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "nomic_bert rejected: %s", err ? err : "?"))
        T_CHECK(cfg.intermediate_size == 512 && cfg.fam.glu_act == BERT_ACT_SIGMOID && cfg.fam.head_act == BERT_ACT_GELU &&
                    cfg.fam.rotary_dim == 16 && cfg.layer_norm_eps == 1e-5f && cfg.fam.dynamic_ntk_factor == 0,
                "nomic_bert: n_inner 300 rounds up to %d", cfg.intermediate_size);
    free(err);
    err = NULL;
    tm_write_text(dir, "config.json", "{\"model_type\": \"new\", \"rope_theta\": 160000, "
                                      "\"rope_scaling\": {\"type\": \"ntk\", \"factor\": 8.0}, \"hidden_act\": \"gelu_new\"}");
    if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "new rejected: %s", err ? err : "?"))
        T_CHECK(cfg.family == BERT_FAMILY_GTE_NEW && cfg.hidden_size == 768 && cfg.max_position_embeddings == 2048 &&
                    cfg.type_vocab_size == 1 && cfg.fam.rotary_dim == 64 && cfg.fam.rope_theta == 160000 &&
                    cfg.fam.ntk_factor == 8.0 && cfg.fam.glu_act == BERT_ACT_GELU_TANH,
                "new: NewConfig's defaults and rope_scaling");
    free(err);
    err = NULL;
    T_CHECK(strcmp(bert_family_name(BERT_FAMILY_NOMIC_BERT), "nomic_bert") == 0 &&
                strcmp(bert_family_name(BERT_FAMILY_GTE_NEW), "new") == 0, "the rotary families' model_type");

    t_case("config: ELECTRA's and ModernBERT's own settings and defaults");
    tm_write_text(dir, "config.json", "{\"model_type\": \"electra\"}");
    if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "rejected: %s", err ? err : "?"))
        T_CHECK(cfg.fam.embedding_size == 128 && cfg.hidden_size == 256 && cfg.num_heads == 4 &&
                    cfg.intermediate_size == 1024 && bert_family_pair_seps(cfg.family) == 1,
                "ElectraConfig's defaults: embedding_size %d hidden_size %d", cfg.fam.embedding_size, cfg.hidden_size);
    tm_write_text(dir, "config.json", "{\"model_type\": \"bert\", \"hidden_size\": 64, \"num_attention_heads\": 4}");
    if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "rejected: %s", err ? err : "?"))
        T_CHECK(cfg.fam.embedding_size == 64, "embedding_size is hidden_size outside ELECTRA");
    tm_write_text(dir, "config.json", "{\"model_type\": \"modernbert\"}");
    if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "rejected: %s", err ? err : "?"))
        T_CHECK(cfg.hidden_size == 768 && cfg.num_layers == 22 && cfg.intermediate_size == 1152 &&
                    cfg.max_position_embeddings == 8192 && cfg.layer_norm_eps == 1e-5f && cfg.fam.global_every == 3 &&
                    cfg.fam.local_window == 128 && cfg.fam.global_rope_theta == 160000.0 &&
                    cfg.fam.local_rope_theta == 10000.0 && !cfg.fam.mean_pooling &&
                    cfg.fam.head_act == BERT_ACT_GELU && bert_config_max_tokens(&cfg) == 8192,
                "ModernBertConfig's defaults");
    tm_write_text(dir, "config.json",
                  "{\"model_type\": \"modernbert\", \"num_hidden_layers\": 3, \"norm_eps\": 1e-6, "
                  "\"classifier_pooling\": \"mean\", \"classifier_activation\": \"gelu_new\", "
                  "\"layer_types\": [\"full_attention\", \"sliding_attention\", \"sliding_attention\"], "
                  "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": 80000}, "
                  "\"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 5000}}}");
    if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "rejected: %s", err ? err : "?"))
        T_CHECK(cfg.layer_norm_eps == 1e-6f && cfg.fam.mean_pooling && cfg.fam.head_act == BERT_ACT_GELU_TANH &&
                    cfg.fam.global_rope_theta == 80000.0 && cfg.fam.local_rope_theta == 5000.0,
                "norm_eps, classifier_pooling, classifier_activation and rope_parameters read");
    free(err);
    err = NULL;

    tm_write_text(dir, "config.json",
                  "{\"model_type\": \"deberta-v2\", \"relative_attention\": true, \"share_att_key\": true, "
                  "\"pos_att_type\": \"p2c|c2p\", \"position_buckets\": 256, \"norm_rel_ebd\": \"layer_norm\", "
                  "\"position_biased_input\": false, \"pooler_hidden_act\": \"gelu\"}");
    if (T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == 0, "rejected: %s", err ? err : "?"))
        T_CHECK(cfg.fam.relative_attention && cfg.fam.c2p && cfg.fam.p2c && cfg.fam.att_span == 256 &&
                    cfg.fam.max_relative == 512 && cfg.fam.rel_norm && !cfg.fam.position_biased &&
                    cfg.layer_norm_eps == 1e-7f && cfg.type_vocab_size == 0 && cfg.fam.embedding_size == 1536,
                "DebertaV2Config's settings and defaults (old pos_att_type string)");
    free(err);
    err = NULL;

    static const struct { const char *json, *needle; } bad[] = {
        {"{\"model_type\": \"albert\"}", "albert\", which is not supported; the supported model types are "
                                          "\"bert\", \"distilbert\", \"roberta\", \"xlm-roberta\", \"mpnet\", "
                                          "\"electra\", \"modernbert\", \"deberta-v2\", \"nomic_bert\" and \"new\""},
        {"{\"model_type\": \"nomic_bert\", \"rotary_emb_fraction\": 1, \"activation_function\": \"swiglu\", "
         "\"causal\": true}", "causal"},
        {"{\"model_type\": \"nomic_bert\", \"rotary_emb_fraction\": 1, \"activation_function\": \"swiglu\", "
         "\"num_heads_kv\": 4}", "num_heads_kv"},
        {"{\"model_type\": \"new\", \"rope_scaling\": {\"type\": \"ntk\", \"factor\": 0.5}}", "rope_scaling"},
        {"{\"model_type\": \"new\", \"type_vocab_size\": -1}", "type_vocab_size"},
        {"{\"model_type\": \"deberta-v2\", \"pooler_hidden_size\": 7}", "pooler_hidden_size"},
        {"{\"model_type\": \"electra\", \"position_embedding_type\": \"relative_key_query\"}",
         "position_embedding_type"},
        {"{\"model_type\": \"modernbert\", \"local_attention\": 0}", "local_attention"},
        {"{\"model_type\": \"modernbert\", \"global_attn_every_n_layers\": 1.5}", "global_attn_every_n_layers"},
        {"{\"model_type\": \"modernbert\", \"global_rope_theta\": -1}", "global_rope_theta"},
        {"{\"model_type\": \"modernbert\", \"classifier_activation\": \"tanh\"}", "classifier_activation"},
        {"{\"model_type\": \"modernbert\", \"hidden_size\": 60, \"num_attention_heads\": 4}", "even"},
        {"{\"model_type\": \"roberta\", \"pad_token_id\": -1}", "pad_token_id"},
        {"{\"model_type\": \"xlm-roberta\", \"pad_token_id\": 511, \"max_position_embeddings\": 512}",
         "pad_token_id"},
        {"{\"model_type\": \"mpnet\", \"relative_attention_num_buckets\": 16}", "relative_attention_num_buckets"},
        {"{\"model_type\": \"distilbert\", \"sinusoidal_pos_embds\": 1}", "sinusoidal_pos_embds must be true or false"},
        {"{\"model_type\": \"bert\", \"position_embedding_type\": \"alibi\", \"feed_forward_type\": \"original\"}",
         "feed_forward_type"},
        {"{\"model_type\": 3}", "model_type"},
        {"{\"hidden_size\": 64}", "vocab_size"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 100, \"num_attention_heads\": 12}", "multiple"},
        {"{\"model_type\": \"bert\", \"num_hidden_layers\": 0}", "num_hidden_layers"},
        {"{\"model_type\": \"bert\", \"vocab_size\": -5}", "vocab_size"},
        {"{\"model_type\": \"bert\", \"vocab_size\": 1e15}", "vocab_size"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 1048576, \"num_attention_heads\": 1}", "hidden_size"},
        {"{\"model_type\": \"bert\", \"max_position_embeddings\": 100000000}", "max_position_embeddings"},
        {"{\"model_type\": \"bert\", \"intermediate_size\": \"big\"}", "intermediate_size"},
        {"{\"model_type\": \"bert\", \"type_vocab_size\": 0}", "type_vocab_size"},
        {"{\"model_type\": \"bert\", \"hidden_act\": \"swish\"}", "swish"},
        {"{\"model_type\": \"bert\", \"layer_norm_eps\": -1}", "layer_norm_eps"},
        {"{\"model_type\": \"bert\", \"layer_norm_eps\": \"tiny\"}", "layer_norm_eps"},
        /* Positive as a double, 0 as the float32 the encoder adds. */
        {"{\"model_type\": \"bert\", \"layer_norm_eps\": 1e-50}", "layer_norm_eps"},
        {"[1, 2]", "object"},
        {"{\"model_type\": \"bert\",", "config.json"},
    };
    t_case("config: bad values are refused with the key named");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tm_write_text(dir, "config.json", bad[i].json);
        err = NULL;
        T_CHECK(bert_config_load(t_dir(dir), &cfg, &err) == -1 && tm_contains(err, bad[i].needle), "%s: %s", bad[i].json,
                err ? err : "accepted");
        free(err);
    }
}

static void sentence_transformers_files(void)
{
    bert_st_config st;
    char *err = NULL;
    tm_dir d = tm_case_dir("stconfig");
    const char *dir = d.path;
    char sub[600];

    t_case("sentence-transformers: a plain checkpoint");
    T_CHECK(bert_st_config_load(t_dir(dir), &st, &err) == 0 && !st.present && st.pooling == BERT_POOL_MEAN &&
            !st.normalize && st.max_seq_length == 0, "got present=%d pooling=%d: %s", st.present, st.pooling,
            err ? err : "");
    free(err);

    t_case("sentence-transformers: the Pooling path, Normalize and max_seq_length");
    snprintf(sub, sizeof sub, "%s/2_Pool", dir);
    mkdir(sub, 0755);
    tm_write_text(dir, "modules.json",
               "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
               " {\"idx\": 1, \"name\": \"1\", \"path\": \"2_Pool\", \"type\": \"sentence_transformers.models.Pooling\"},"
               " {\"idx\": 2, \"name\": \"2\", \"path\": \"3_Normalize\", \"type\": \"sentence_transformers.models.Normalize\"}]");
    tm_write_text(sub, "config.json",
               "{\"word_embedding_dimension\": 8, \"pooling_mode_cls_token\": true,"
               " \"pooling_mode_mean_tokens\": false, \"pooling_mode_max_tokens\": false}");
    tm_write_text(dir, "sentence_bert_config.json", "{\"max_seq_length\": 256, \"do_lower_case\": false}");
    err = NULL;
    T_CHECK(bert_st_config_load(t_dir(dir), &st, &err) == 0 && st.present && st.pooling == BERT_POOL_CLS && st.normalize &&
            st.max_seq_length == 256, "got present=%d pooling=%d normalize=%d max=%d: %s", st.present, st.pooling,
            st.normalize, st.max_seq_length, err ? err : "");
    free(err);

    t_case("sentence-transformers: 1_Pooling without modules.json");
    d = tm_case_dir("stconfig2");
    snprintf(sub, sizeof sub, "%s/1_Pooling", dir);
    mkdir(sub, 0755);
    tm_write_text(sub, "config.json", "{\"pooling_mode_max_tokens\": true, \"pooling_mode_mean_tokens\": false}");
    err = NULL;
    T_CHECK(bert_st_config_load(t_dir(dir), &st, &err) == 0 && st.present && st.pooling == BERT_POOL_MAX && !st.normalize,
            "got present=%d pooling=%d: %s", st.present, st.pooling, err ? err : "");
    free(err);

    static const struct { const char *pooling, *needle; } bad[] = {
        {"{\"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": true}", "several"},
        {"{\"pooling_mode_lasttoken\": true}", "pooling_mode_lasttoken"},
        {"{\"pooling_mode_weightedmean_tokens\": true}", "weightedmean"},
        {"{\"pooling_mode_cls_token\": ", "config.json"},
    };
    t_case("sentence-transformers: pooling modes that cannot be honoured");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tm_write_text(sub, "config.json", bad[i].pooling);
        err = NULL;
        T_CHECK(bert_st_config_load(t_dir(dir), &st, &err) == -1 && tm_contains(err, bad[i].needle), "%s: %s", bad[i].pooling,
                err ? err : "accepted");
        free(err);
    }

    t_case("sentence-transformers: modules that would change the vectors");
    tm_write_text(sub, "config.json", "{\"pooling_mode_mean_tokens\": true}");
    tm_write_text(dir, "modules.json",
               "[{\"idx\": 0, \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
               " {\"idx\": 1, \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"},"
               " {\"idx\": 2, \"path\": \"2_Dense\", \"type\": \"sentence_transformers.models.Dense\"}]");
    err = NULL;
    T_CHECK(bert_st_config_load(t_dir(dir), &st, &err) == -1 && tm_contains(err, "Dense"), "got: %s", err ? err : "accepted");
    free(err);
    /* PyLate's ColBERT layout is the one Dense accepted: right after the
     * Transformer, alone, without pooling. */
    static const char *const colbert[] = {
        "[{\"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
        " {\"path\": \"1_Dense\", \"type\": \"pylate.models.Dense.Dense\"}]",
        "[{\"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
        " {\"path\": \"1_Dense\", \"type\": \"pylate.models.Dense.Dense\"},"
        " {\"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}]",
        "[{\"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
        " {\"path\": \"1_Dense\", \"type\": \"pylate.models.Dense.Dense\"},"
        " {\"path\": \"2_Dense\", \"type\": \"pylate.models.Dense.Dense\"}]",
    };
    for (int i = 0; i < 3; i++) {
        tm_write_text(dir, "modules.json", colbert[i]);
        err = NULL;
        int rc = bert_st_config_load(t_dir(dir), &st, &err);
        T_CHECK(i == 0 ? rc == 0 && st.dense : rc == -1 && tm_contains(err, i == 1 ? "Pooling" : "Dense"),
                "%s: %s", colbert[i], err ? err : "accepted");
        free(err);
    }
    tm_write_text(dir, "modules.json", "{\"not\": \"an array\"}");
    err = NULL;
    T_CHECK(bert_st_config_load(t_dir(dir), &st, &err) == -1 && tm_contains(err, "modules.json"), "got: %s", err ? err : "accepted");
    free(err);
    remove(TM_ROOT "/stconfig2/modules.json");
    tm_write_text(dir, "sentence_bert_config.json", "{\"max_seq_length\": -3}");
    err = NULL;
    T_CHECK(bert_st_config_load(t_dir(dir), &st, &err) == -1 && tm_contains(err, "max_seq_length"), "got: %s", err ? err : "accepted");
    free(err);
}

static void prompts(void)
{
    char *err = NULL, *prompt = NULL;
    tm_dir d = tm_case_dir("prompts");
    const char *dir = d.path;
    char file[600];
    snprintf(file, sizeof file, "%s/config_sentence_transformers.json", dir);
    remove(file);   /* left by an earlier run */

    t_case("prompts: none without config_sentence_transformers.json, an error when one is named");
    T_CHECK(bert_st_prompt(t_dir(dir), NULL, &prompt, &err) == 0 && !prompt, "got %s: %s", prompt ? prompt : "NULL",
            err ? err : "");
    T_CHECK(bert_st_prompt(t_dir(dir), "query", &prompt, &err) == -1 && tm_contains(err, "has no prompts") &&
            tm_contains(err, "{\"text\""), "%s", err ? err : "accepted");
    free(err);
    err = NULL;

    t_case("prompts: default_prompt_name applies when none is named; a named one wins");
    tm_write_text(dir, "config_sentence_transformers.json",
                  "{\"prompts\": {\"query\": \"query: \", \"passage\": \"passage: \", \"none\": \"\"}, "
                  "\"default_prompt_name\": \"passage\"}");
    if (T_CHECK(bert_st_prompt(t_dir(dir), NULL, &prompt, &err) == 0 && prompt, "%s", err ? err : "no prompt"))
        T_CHECK(strcmp(prompt, "passage: ") == 0, "default %s", prompt);
    free(prompt);
    prompt = NULL;
    if (T_CHECK(bert_st_prompt(t_dir(dir), "query", &prompt, &err) == 0 && prompt, "%s", err ? err : "no prompt"))
        T_CHECK(strcmp(prompt, "query: ") == 0, "named %s", prompt);
    free(prompt);
    prompt = NULL;
    /* sentence-transformers adds nothing for an empty prompt. */
    T_CHECK(bert_st_prompt(t_dir(dir), "none", &prompt, &err) == 0 && !prompt, "empty prompt %s", prompt ? prompt : "");

    t_case("prompts: an unknown name lists the model's prompts");
    T_CHECK(bert_st_prompt(t_dir(dir), "search", &prompt, &err) == -1 && tm_contains(err, "\"search\"") &&
            tm_contains(err, "\"query\", \"passage\", \"none\""), "%s", err ? err : "accepted");
    free(err);
    err = NULL;
    tm_write_text(dir, "config_sentence_transformers.json", "{\"prompts\": [\"query: \"]}");
    T_CHECK(bert_st_prompt(t_dir(dir), "query", &prompt, &err) == -1 && tm_contains(err, "\"prompts\" must be an object"),
            "%s", err ? err : "accepted");
    free(err);
}

void suite_config(void)
{
    config_json();
    sentence_transformers_files();
    prompts();
}
