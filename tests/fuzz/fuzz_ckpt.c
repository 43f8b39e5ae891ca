/* fuzz_ckpt.c -- the training checkpoint reader
 * (arachne_trainer_load_checkpoint) on a trainer with one composition
 * (llama3-8b on "a100-40:2x4,h100:1x8", a policy with 4 hidden units,
 * one update of plans of one template, so a file with kept plans stays
 * about 10 KB).
 * Byte 0 bit 0 rewrites the trailing CRC-32 so mutations reach the checks
 * behind it; bit 1 splices: the input holds the 64-byte header and what
 * follows the weights and Adam moments, and the baseline's weights and
 * moments (24 bytes per parameter, about 440 KB) are put between them, so
 * inputs stay small and mutations hit the structure; the rest is the file.  Properties: no crash, leak or hang; a
 * refused file is CORRUPT / UNSUPPORTED / INVALID_ARGUMENT / NO_MEMORY
 * with a message naming it and leaves the trainer exactly as it was (its
 * checkpoint bytes unchanged); an accepted file leaves a state the writer
 * saves (never a state it refuses) and that reloads to the same bytes. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "fuzz_common.h"
#include "fuzz_tmpdir.h"
#include "crc32.h"
#include "train.h"

static arachne_trainer *trainer;
static ar_buf baseline;
static size_t weights_len; /* 24 bytes per parameter: weights, 2 Adam moments */
static char in_path[512], base_path[512], again_path[512];
static const char *const scratch_files[] = { "in.ckpt", "base.ckpt", "again.ckpt", NULL };

static void write_all(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(fwrite(d, 1, n, f) == n);
    FUZZ_CHECK(fclose(f) == 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    arachne_policy *pol = NULL;
    const char *seed_dir = getenv("ARACHNE_FUZZ_CKPT_SEED_DIR");
    (void)argc;
    (void)argv;
    fuzz_tmpdir_make("ckpt", scratch_files);
    fuzz_tmpdir_path(in_path, sizeof in_path, scratch_files[0]);
    fuzz_tmpdir_path(base_path, sizeof base_path, scratch_files[1]);
    fuzz_tmpdir_path(again_path, sizeof again_path, scratch_files[2]);
    /* objects below live as long as the process: the trainer borrows them */
    if (arachne_model_preset(&m, "llama3-8b") || arachne_cluster_parse(&c, "a100-40:2x4,h100:1x8") ||
        arachne_profile_generate(&p, m, c, 4096) || arachne_cost_model_create(&cm, m, c, p) ||
        arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, 64) || arachne_policy_create(&pol, 3, 4, 1) ||
        arachne_trainer_create(&trainer, pol, 5) || arachne_trainer_add_composition(trainer, cm, "a") ||
        arachne_trainer_set(trainer, ARACHNE_TRAIN_GROUP_SIZE, 2) ||
        arachne_trainer_set(trainer, ARACHNE_TRAIN_PPO_EPOCHS, 1) ||
        arachne_trainer_set(trainer, ARACHNE_TRAIN_SIL_INTERVAL, 1) ||
        arachne_trainer_set(trainer, ARACHNE_TRAIN_SIL_PER_DEPTH, 1) ||
        arachne_trainer_set(trainer, ARACHNE_TRAIN_MAX_STEPS, 1) || arachne_trainer_run(trainer, 1, NULL, NULL)) {
        fprintf(stderr, "fuzz_ckpt setup: %s\n", arachne_last_error());
        abort();
    }
    ar_buf_init(&baseline);
    if (ar_train_ckpt_encode(trainer, &baseline)) abort();
    write_all(base_path, baseline.data, baseline.len);
    weights_len = 24 * ar_nn_param_count(pol->nn);
    if (seed_dir) { /* regenerate the committed seeds (tests/fuzz/README.md) */
        char path[512];
        unsigned char *x = malloc(baseline.len + 1);
        if (!x) abort();
        x[0] = 0;
        memcpy(x + 1, baseline.data, baseline.len);
        snprintf(path, sizeof path, "%s/valid", seed_dir);
        write_all(path, x, baseline.len + 1);
        x[0] = 1;
        x[1 + 200] ^= 0x7f; /* a weight, CRC rewritten by the mode */
        snprintf(path, sizeof path, "%s/weight-changed-fixcrc", seed_dir);
        write_all(path, x, baseline.len + 1);
        snprintf(path, sizeof path, "%s/truncated", seed_dir);
        write_all(path, x, baseline.len / 2);
        /* spliced (mode bit 1): header + what follows the moments */
        x[0] = 3;
        memcpy(x + 1, baseline.data, 64);
        memcpy(x + 65, baseline.data + 64 + weights_len, baseline.len - 64 - weights_len);
        snprintf(path, sizeof path, "%s/spliced", seed_dir);
        write_all(path, x, 1 + baseline.len - weights_len);
        x[0] = 2;
        snprintf(path, sizeof path, "%s/spliced-nocrc", seed_dir);
        write_all(path, x, 1 + baseline.len - weights_len);
        x[0] = 3;
        x[65 + 70] ^= 0x01; /* the update counter / options region */
        snprintf(path, sizeof path, "%s/spliced-changed", seed_dir);
        write_all(path, x, 1 + baseline.len - weights_len);
        free(x);
    }
    return 0;
}

/* The trainer's checkpoint bytes now; the caller frees. */
static ar_buf encode_now(int *st)
{
    ar_buf b;
    ar_buf_init(&b);
    *st = ar_train_ckpt_encode(trainer, &b);
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *img;
    size_t len;
    ar_buf now, again;
    int st, est;
    if (size < 1) return 0;
    len = size - 1;
    if ((data[0] & 2) && len >= 64) {
        img = malloc(len + weights_len);
        if (!img) return 0;
        memcpy(img, data + 1, 64);
        memcpy(img + 64, baseline.data + 64, weights_len);
        memcpy(img + 64 + weights_len, data + 1 + 64, len - 64);
        len += weights_len;
    } else {
        img = (unsigned char *)fuzz_copy(data + 1, len);
        if (!img) return 0;
    }
    if ((data[0] & 1) && len >= 4) {
        uint32_t c = ar_crc32(img, len - 4);
        int i;
        for (i = 0; i < 4; i++) img[len - 4 + i] = (unsigned char)(c >> (8 * i));
    }
    write_all(in_path, img, len);
    free(img);
    arachne_clear_error();
    st = arachne_trainer_load_checkpoint(trainer, in_path);
    now = encode_now(&est);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK(st == ARACHNE_E_CORRUPT || st == ARACHNE_E_UNSUPPORTED || st == ARACHNE_E_INVALID_ARGUMENT ||
                   st == ARACHNE_E_NO_MEMORY || st == ARACHNE_E_IO);
        FUZZ_CHECK(strstr(arachne_last_error(), in_path) != NULL);
        FUZZ_CHECK(est == ARACHNE_OK && now.len == baseline.len && memcmp(now.data, baseline.data, now.len) == 0);
        ar_buf_free(&now);
        return 0;
    }
    /* accepted: the writer must take the state, and it must reload */
    FUZZ_CHECK(est == ARACHNE_OK);
    write_all(again_path, now.data, now.len);
    FUZZ_CHECK(arachne_trainer_load_checkpoint(trainer, again_path) == ARACHNE_OK);
    again = encode_now(&est);
    FUZZ_CHECK(est == ARACHNE_OK && again.len == now.len && memcmp(again.data, now.data, now.len) == 0);
    ar_buf_free(&again);
    ar_buf_free(&now);
    FUZZ_CHECK(arachne_trainer_load_checkpoint(trainer, base_path) == ARACHNE_OK);
    return 0;
}
