def test_create_amlcompute(owner_api, workspace):
    response = owner_api.post(
        "/api/v1/workspaces/team-a/computes/", {"name": "cpu-cluster", "type": "amlcompute", "max_instances": 3}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["max_instances"] == 3
